package jobs

import (
	"fmt"
	"net/url"
	"strings"
)

// ParseURL reads Config.URL: the kind of database ("sqlite" or
// "postgres") and, for SQLite, the file's path ("" for the default file
// in the data directory).
func ParseURL(raw string) (kind, path string, err error) {
	switch {
	case raw == "":
		return "sqlite", "", nil
	case strings.HasPrefix(raw, "sqlite://"):
		u, err := url.Parse(raw)
		if err != nil || u.Host != "" || u.Path == "" || strings.HasSuffix(u.Path, "/") {
			return "", "", fmt.Errorf("database URL %q: want sqlite:///absolute/path/to/jobs.db (three slashes)", Redact(raw))
		}
		return "sqlite", u.Path, nil
	case strings.HasPrefix(raw, "postgres://"), strings.HasPrefix(raw, "postgresql://"):
		if _, err := url.Parse(raw); err != nil {
			return "", "", fmt.Errorf("database URL %s: not a URL", Redact(raw))
		}
		return "postgres", "", nil
	}
	return "", "", fmt.Errorf("database URL %q: want sqlite:///path or postgres://user:password@host:port/database", Redact(raw))
}

// Redact is a database URL fit for logs and errors: without its password
// (in the user part or a password= parameter).
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		// Not a URL: cut anything after a scheme's "user:" up to "@".
		if i, j := strings.Index(raw, "://"), strings.LastIndex(raw, "@"); i >= 0 && j > i {
			user, _, _ := strings.Cut(raw[i+3:j], ":")
			return raw[:i+3] + user + raw[j:]
		}
		return "(an invalid URL)"
	}
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	q := u.Query()
	if q.Has("password") {
		q.Del("password")
		u.RawQuery = q.Encode()
	}
	return u.String()
}
