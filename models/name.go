package models

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
)

// Name is a parsed model name: [host/][namespace/]model[:tag]. Names made
// by [ParseName] are fully qualified: a missing host, namespace or tag is
// filled in with [DefaultHost], [DefaultNamespace] and [DefaultTag], as
// Ollama does, so "llama3" is registry.ollama.ai/library/llama3:latest.
type Name struct {
	Host      string
	Namespace string
	Model     string
	Tag       string
}

// The defaults that complete a short name.
const (
	DefaultHost      = "registry.ollama.ai"
	DefaultNamespace = "library"
	DefaultTag       = "latest"
)

// Each part of a name is one directory level of the manifest tree, so a
// part must be a harmless path component: letters, digits, '_', '-' and
// '.', never starting with '.' (so never "." or ".."), never containing a
// separator. A host may also hold ':' for a port ("localhost:5000").
var (
	namePart = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}$`)
	hostPart = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.\-:]{0,349}$`)
)

// ParseName parses and validates a model name and fills in the default
// host, namespace and tag. One part is the model, two are
// namespace/model, three are host/namespace/model; a ':' after the last
// '/' starts the tag. No valid name can escape the store's directory:
// "../../etc/passwd" and the like are errors.
func ParseName(s string) (Name, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Name{}, fmt.Errorf("model name is empty")
	}
	var n Name
	rest := s
	if i := strings.LastIndex(rest, ":"); i >= 0 && !strings.Contains(rest[i:], "/") {
		n.Tag, rest = rest[i+1:], rest[:i]
		if n.Tag == "" {
			return Name{}, fmt.Errorf("invalid model name %q: empty tag", s)
		}
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
	if len(parts) == 3 && !hostPart.MatchString(n.Host) {
		return Name{}, fmt.Errorf("invalid model name %q: bad host %q", s, n.Host)
	}
	if len(parts) >= 2 && !namePart.MatchString(n.Namespace) {
		return Name{}, fmt.Errorf("invalid model name %q: bad namespace %q", s, n.Namespace)
	}
	if !namePart.MatchString(n.Model) {
		return Name{}, fmt.Errorf("invalid model name %q: bad model part %q", s, n.Model)
	}
	if n.Tag != "" && !namePart.MatchString(n.Tag) {
		return Name{}, fmt.Errorf("invalid model name %q: bad tag %q", s, n.Tag)
	}
	return n.withDefaults(), nil
}

func (n Name) withDefaults() Name {
	if n.Host == "" {
		n.Host = DefaultHost
	}
	if n.Namespace == "" {
		n.Namespace = DefaultNamespace
	}
	if n.Tag == "" {
		n.Tag = DefaultTag
	}
	return n
}

// valid reports whether every part of a fully qualified name is a safe
// path component.
func (n Name) valid() bool {
	return hostPart.MatchString(n.Host) && namePart.MatchString(n.Namespace) &&
		namePart.MatchString(n.Model) && namePart.MatchString(n.Tag)
}

// String is the shortest display form, as Ollama shows names: the default
// host and namespace are left out, the tag never is ("llama3:latest",
// "someone/model:latest", "hf.co/someone/model:Q4_0").
func (n Name) String() string {
	n = n.withDefaults()
	s := n.Model + ":" + n.Tag
	switch {
	case !strings.EqualFold(n.Host, DefaultHost):
		return n.Host + "/" + n.Namespace + "/" + s
	case !strings.EqualFold(n.Namespace, DefaultNamespace):
		return n.Namespace + "/" + s
	}
	return s
}

// Full is the fully qualified form "host/namespace/model:tag".
func (n Name) Full() string {
	n = n.withDefaults()
	return n.Host + "/" + n.Namespace + "/" + n.Model + ":" + n.Tag
}

// EqualFold reports whether two names are the same model. Like Ollama,
// the store treats names case-insensitively.
func (n Name) EqualFold(o Name) bool {
	n, o = n.withDefaults(), o.withDefaults()
	return strings.EqualFold(n.Host, o.Host) && strings.EqualFold(n.Namespace, o.Namespace) &&
		strings.EqualFold(n.Model, o.Model) && strings.EqualFold(n.Tag, o.Tag)
}

// filepath is the name's place in the manifest tree:
// host/namespace/model/tag.
func (n Name) filepath() string {
	n = n.withDefaults()
	return filepath.Join(n.Host, n.Namespace, n.Model, n.Tag)
}
