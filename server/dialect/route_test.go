package dialect

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
)

// TestRoute: the route's method is served; every other method is a 405
// naming the allowed one, through the group (so its error handler).
func TestRoute(t *testing.T) {
	e := echo.New()
	g := e.Group("/v1/x")
	Route(g, http.MethodPost, "", func(c echo.Context) error { return c.String(http.StatusOK, "ok") })
	for _, tc := range []struct {
		method string
		status int
	}{{http.MethodPost, 200}, {http.MethodGet, 405}, {http.MethodDelete, 405}, {http.MethodPut, 405}} {
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(tc.method, "/v1/x", nil))
		if rec.Code != tc.status {
			t.Errorf("%s: %d, want %d", tc.method, rec.Code, tc.status)
		}
		if tc.status == 405 && rec.Header().Get(echo.HeaderAllow) != http.MethodPost {
			t.Errorf("%s: Allow %q", tc.method, rec.Header().Get(echo.HeaderAllow))
		}
	}
}

func TestNewID(t *testing.T) {
	a, b := NewID("msg_"), NewID("msg_")
	if len(a) != len("msg_")+24 || a[:4] != "msg_" || a == b {
		t.Fatalf("%q %q", a, b)
	}
	for _, c := range a[4:] {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			t.Fatalf("%q: %q is not a letter or digit", a, c)
		}
	}
}
