package infer

import (
	"errors"
	"fmt"
	"testing"
)

// Each Kind's answer, the same for every dialect; field errors keep their
// field.
func TestHTTPError(t *testing.T) {
	for _, tc := range []struct {
		err          error
		status, wait int
		param        string
	}{
		{Errorf(BadRequest, "model is required"), 400, 0, ""},
		{Errorf(NotFound, "model %q not found, try pulling it first", "x"), 404, 0, ""},
		{Errorf(Unavailable, "server busy"), 503, 5, ""},
		{Errorf(LoadFailed, "model %q cannot be loaded", "x"), 500, 0, ""},
		{Errorf(Internal, "broken"), 500, 0, ""},
		{errors.New("no kind"), 500, 0, ""},
		{fmt.Errorf("sampling: %w", Errorf(NotFound, "gone")), 404, 0, ""},
		{paramErrorf("top_p", "Invalid 'top_p': 2. Expected a value between 0 and 1."), 400, 0, "top_p"},
	} {
		e := HTTPError(tc.err)
		if e.Status != tc.status || e.RetryAfter != tc.wait || e.Param != tc.param || e.Message != tc.err.Error() || !errors.Is(e, tc.err) {
			t.Errorf("%v: %+v", tc.err, e)
		}
	}
}
