package dialect

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tadpole-llm/tadpole/server/infer"
)

// Each Kind's answer, the same for every dialect; field errors keep their
// field.
func TestFromInfer(t *testing.T) {
	for _, tc := range []struct {
		err          error
		status, wait int
		param        string
	}{
		{infer.Errorf(infer.BadRequest, "model is required"), 400, 0, ""},
		{infer.Errorf(infer.NotFound, "model %q not found, try pulling it first", "x"), 404, 0, ""},
		{infer.Errorf(infer.Unavailable, "server busy"), 503, 5, ""},
		{infer.Errorf(infer.LoadFailed, "model %q cannot be loaded", "x"), 500, 0, ""},
		{infer.Errorf(infer.Internal, "broken"), 500, 0, ""},
		{errors.New("no kind"), 500, 0, ""},
		{fmt.Errorf("sampling: %w", infer.Errorf(infer.NotFound, "gone")), 404, 0, ""},
		{&infer.ParamError{Param: "top_p", Message: "Invalid 'top_p': 2. Expected a value between 0 and 1."}, 400, 0, "top_p"},
	} {
		e := FromInfer(tc.err)
		if e.Status != tc.status || e.RetryAfter != tc.wait || e.Param != tc.param || e.Message != tc.err.Error() || !errors.Is(e, tc.err) {
			t.Errorf("%v: %+v", tc.err, e)
		}
	}
}
