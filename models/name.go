package models

import (
	"fmt"
	"regexp"
	"strings"
)

// Name is a parsed model name: [host/][namespace/]model[:tag].
type Name struct {
	Host      string
	Namespace string
	Model     string
	Tag       string
}

// DefaultTag is the tag of a name given without one.
const DefaultTag = "latest"

var namePart = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}$`)

// ParseName parses and validates a model name. Each part is letters,
// digits, '_', '-' and '.', never starting with '.', so no name can escape
// the store's directory.
func ParseName(s string) (Name, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Name{}, fmt.Errorf("model name is empty")
	}
	var n Name
	rest := s
	if i := strings.LastIndex(rest, ":"); i >= 0 && !strings.Contains(rest[i:], "/") {
		n.Tag, rest = rest[i+1:], rest[:i]
	}
	parts := strings.Split(rest, "/")
	switch len(parts) {
	case 1:
		n.Model = parts[0]
	case 2:
		n.Namespace, n.Model = parts[0], parts[1]
	case 3:
		n.Host, n.Namespace, n.Model = parts[0], parts[1], parts[2]
	default:
		return Name{}, fmt.Errorf("invalid model name %q: at most host/namespace/model:tag", s)
	}
	if n.Tag == "" {
		n.Tag = DefaultTag
	}
	for _, p := range []string{n.Host, n.Namespace} {
		if p != "" && !namePart.MatchString(p) {
			return Name{}, fmt.Errorf("invalid model name %q", s)
		}
	}
	if !namePart.MatchString(n.Model) || !namePart.MatchString(n.Tag) {
		return Name{}, fmt.Errorf("invalid model name %q", s)
	}
	return n, nil
}

// String is the short display form: the namespace and host only when
// given, the tag always ("stories:latest").
func (n Name) String() string {
	s := n.Model + ":" + n.Tag
	if n.Namespace != "" {
		s = n.Namespace + "/" + s
	}
	if n.Host != "" {
		s = n.Host + "/" + s
	}
	return s
}
