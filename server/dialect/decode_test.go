package dialect

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

// TestDecode: each kind of bad body reaches the dialect's words as its
// own fault; a good object decodes.
func TestDecode(t *testing.T) {
	type req struct {
		Model string `json:"model"`
		N     int8   `json:"n"`
	}
	e := echo.New()
	for _, c := range []struct {
		body string
		want string // the fault, as fault() prints it; "" none
	}{
		{`{"model":"m","n":3}`, ""},
		{"", "empty"},
		{" \n\t", "empty"},
		{`[1]`, "not an object"},
		{`null`, "not an object"},
		{`"x"`, "not an object"},
		{`{"model":`, "json"},
		{`{"model":"m"} x`, "json"},
		{`{"model":3}`, "type model string number"},
		{`{"n":300}`, "type n int8 number 300"},
		{`{"n":"3"}`, "type n int8 string"},
	} {
		ctx := e.NewContext(httptest.NewRequest("POST", "/", strings.NewReader(c.body)), httptest.NewRecorder())
		var got string
		var v req
		err := Decode(ctx, &v, func(f BodyFault) error {
			switch {
			case f.Empty:
				got = "empty"
			case f.NotObject:
				got = "not an object"
			case f.TypeError:
				got = strings.Join([]string{"type", f.Field, f.Want, f.Got}, " ")
			case f.JSON != nil:
				got = "json"
			default:
				got = "?"
			}
			return Invalid("", "%s", got)
		})
		if c.want == "" {
			if err != nil || v.Model != "m" || v.N != 3 {
				t.Errorf("%q: %v, %+v", c.body, err, v)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(c.want, got) || got == "" {
			t.Errorf("%q: fault %q (%v), want %q", c.body, got, err, c.want)
		}
	}
}
