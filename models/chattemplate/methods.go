package chattemplate

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// method makes a bound method.
func method(name string, fn func(args []any, kw *kwargs) (any, error)) *callable {
	return &callable{name: name, fn: func(_ *evaluator, args []any, kw *kwargs) (any, error) { return fn(args, kw) }}
}

// arg returns the i-th positional argument or the keyword argument
// name, or def.
func arg(args []any, kw *kwargs, i int, name string, def any) any {
	if i < len(args) {
		return args[i]
	}
	if v, ok := kw.get(name); ok {
		return v
	}
	return def
}

func strArg(args []any, kw *kwargs, i int, name, fn string) (string, error) {
	v := arg(args, kw, i, name, nil)
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s() argument must be str, not %s", fn, typeName(v))
	}
	return s, nil
}

func intArg(args []any, kw *kwargs, i int, name string, def int64) (int64, error) {
	v := arg(args, kw, i, name, def)
	if v == nil {
		return def, nil
	}
	n, ok := asInt(v)
	if !ok {
		return 0, fmt.Errorf("'%s' object cannot be interpreted as an integer", typeName(v))
	}
	return n, nil
}

// stripChars implements str.strip/lstrip/rstrip(chars=None).
func stripChars(s string, args []any, kw *kwargs, left, right bool) (any, error) {
	cut := func(r rune) bool { return unicode.IsSpace(r) }
	if v := arg(args, kw, 0, "chars", nil); v != nil {
		chars, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("strip arg must be None or str")
		}
		cut = func(r rune) bool { return strings.ContainsRune(chars, r) }
	}
	if left {
		s = strings.TrimLeftFunc(s, cut)
	}
	if right {
		s = strings.TrimRightFunc(s, cut)
	}
	return s, nil
}

// pySplit is str.split(sep=None, maxsplit=-1).
func pySplit(s string, sep any, maxsplit int64) ([]any, error) {
	var parts []string
	switch sp := sep.(type) {
	case nil:
		fields := strings.FieldsFunc(s, unicode.IsSpace)
		if maxsplit >= 0 && int64(len(fields)) > maxsplit+1 {
			// Re-split keeping the remainder whole.
			rest := strings.TrimLeftFunc(s, unicode.IsSpace)
			parts = nil
			for i := int64(0); i < maxsplit; i++ {
				j := strings.IndexFunc(rest, unicode.IsSpace)
				parts = append(parts, rest[:j])
				rest = strings.TrimLeftFunc(rest[j:], unicode.IsSpace)
			}
			parts = append(parts, rest)
		} else {
			parts = fields
		}
	case string:
		if sp == "" {
			return nil, fmt.Errorf("empty separator")
		}
		parts = strings.SplitN(s, sp, int(max(maxsplit+1, -1)))
		if maxsplit < 0 {
			parts = strings.Split(s, sp)
		}
	default:
		return nil, fmt.Errorf("must be str or None, not %s", typeName(sep))
	}
	out := make([]any, len(parts))
	for i, p := range parts {
		out[i] = p
	}
	return out, nil
}

func prefixes(v any) ([]string, error) {
	switch x := v.(type) {
	case string:
		return []string{x}, nil
	case *list:
		var out []string
		for _, it := range x.items {
			s, ok := it.(string)
			if !ok {
				return nil, fmt.Errorf("tuple for startswith must only contain str")
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("startswith first arg must be str or a tuple of str, not %s", typeName(v))
}

// pyTitle is str.title(): the first letter of each run of letters upper
// case, the rest lower case.
func pyTitle(s string) string {
	var b strings.Builder
	prevLetter := false
	for _, r := range s {
		if prevLetter {
			b.WriteRune(unicode.ToLower(r))
		} else {
			b.WriteRune(unicode.ToTitle(r))
		}
		prevLetter = unicode.IsLetter(r)
	}
	return b.String()
}

func pyCapitalize(s string) string {
	for i, r := range s {
		return string(unicode.ToUpper(r)) + strings.ToLower(s[i+len(string(r)):])
	}
	return s
}

func strMethod(s string, name string) *callable {
	var fn func(args []any, kw *kwargs) (any, error)
	switch name {
	case "strip", "lstrip", "rstrip":
		fn = func(args []any, kw *kwargs) (any, error) {
			return stripChars(s, args, kw, name != "rstrip", name != "lstrip")
		}
	case "split", "rsplit":
		fn = func(args []any, kw *kwargs) (any, error) {
			n, err := intArg(args, kw, 1, "maxsplit", -1)
			if err != nil {
				return nil, err
			}
			sep := arg(args, kw, 0, "sep", nil)
			if name == "rsplit" && n >= 0 {
				if sp, ok := sep.(string); ok && sp != "" {
					parts := strings.Split(s, sp)
					if int64(len(parts)) > n+1 {
						head := strings.Join(parts[:int64(len(parts))-n], sp)
						parts = append([]string{head}, parts[int64(len(parts))-n:]...)
					}
					out := make([]any, len(parts))
					for i, p := range parts {
						out[i] = p
					}
					return newList(out...), nil
				}
			}
			parts, err := pySplit(s, sep, n)
			return newList(parts...), err
		}
	case "splitlines":
		fn = func(args []any, kw *kwargs) (any, error) {
			var out []any
			for _, l := range strings.SplitAfter(s, "\n") {
				if l != "" {
					out = append(out, strings.TrimSuffix(strings.TrimSuffix(l, "\n"), "\r"))
				}
			}
			return newList(out...), nil
		}
	case "startswith", "endswith":
		fn = func(args []any, kw *kwargs) (any, error) {
			ps, err := prefixes(arg(args, kw, 0, "prefix", nil))
			if err != nil {
				return nil, err
			}
			for _, p := range ps {
				if name == "startswith" && strings.HasPrefix(s, p) || name == "endswith" && strings.HasSuffix(s, p) {
					return true, nil
				}
			}
			return false, nil
		}
	case "upper":
		fn = func([]any, *kwargs) (any, error) { return strings.ToUpper(s), nil }
	case "lower":
		fn = func([]any, *kwargs) (any, error) { return strings.ToLower(s), nil }
	case "title":
		fn = func([]any, *kwargs) (any, error) { return pyTitle(s), nil }
	case "capitalize":
		fn = func([]any, *kwargs) (any, error) { return pyCapitalize(s), nil }
	case "replace":
		fn = func(args []any, kw *kwargs) (any, error) {
			old, err := strArg(args, kw, 0, "old", "replace")
			if err != nil {
				return nil, err
			}
			nw, err := strArg(args, kw, 1, "new", "replace")
			if err != nil {
				return nil, err
			}
			n, err := intArg(args, kw, 2, "count", -1)
			if err != nil {
				return nil, err
			}
			return strings.Replace(s, old, nw, int(n)), nil
		}
	case "find", "rfind", "count", "index":
		fn = func(args []any, kw *kwargs) (any, error) {
			sub, err := strArg(args, kw, 0, "sub", name)
			if err != nil {
				return nil, err
			}
			var i int
			switch name {
			case "count":
				return int64(strings.Count(s, sub)), nil
			case "rfind":
				i = strings.LastIndex(s, sub)
			default:
				i = strings.Index(s, sub)
			}
			if i >= 0 {
				i = len([]rune(s[:i]))
			} else if name == "index" {
				return nil, fmt.Errorf("substring not found")
			}
			return int64(i), nil
		}
	case "join":
		fn = func(args []any, kw *kwargs) (any, error) {
			items, err := iterate(arg(args, kw, 0, "iterable", nil))
			if err != nil {
				return nil, err
			}
			parts := make([]string, len(items))
			for i, it := range items {
				str, ok := it.(string)
				if !ok {
					return nil, fmt.Errorf("sequence item %d: expected str instance, %s found", i, typeName(it))
				}
				parts[i] = str
			}
			return strings.Join(parts, s), nil
		}
	case "format":
		fn = func(args []any, kw *kwargs) (any, error) { return pyFormat(s, args, kw) }
	case "isdigit", "isalpha", "isalnum", "isspace", "isupper", "islower":
		fn = func([]any, *kwargs) (any, error) {
			if s == "" {
				return false, nil
			}
			cased := false
			for _, r := range s {
				ok := true
				switch name {
				case "isdigit":
					ok = unicode.IsDigit(r)
				case "isalpha":
					ok = unicode.IsLetter(r)
				case "isalnum":
					ok = unicode.IsLetter(r) || unicode.IsDigit(r)
				case "isspace":
					ok = unicode.IsSpace(r)
				case "isupper":
					ok = !unicode.IsLower(r)
					cased = cased || unicode.IsUpper(r)
				case "islower":
					ok = !unicode.IsUpper(r)
					cased = cased || unicode.IsLower(r)
				}
				if !ok {
					return false, nil
				}
			}
			return cased || (name != "isupper" && name != "islower"), nil
		}
	default:
		return nil
	}
	return method("str."+name, fn)
}

func dictMethod(d *dict, name string) *callable {
	switch name {
	case "items":
		return method("dict.items", func([]any, *kwargs) (any, error) {
			out := make([]any, len(d.keys))
			for i, k := range d.keys {
				out[i] = newList(k, d.m[k])
			}
			return newList(out...), nil
		})
	case "keys":
		return method("dict.keys", func([]any, *kwargs) (any, error) {
			return newList(append([]any(nil), d.keys...)...), nil
		})
	case "values":
		return method("dict.values", func([]any, *kwargs) (any, error) {
			out := make([]any, len(d.keys))
			for i, k := range d.keys {
				out[i] = d.m[k]
			}
			return newList(out...), nil
		})
	case "get":
		return method("dict.get", func(args []any, kw *kwargs) (any, error) {
			if len(args) == 0 {
				return nil, fmt.Errorf("get expected at least 1 argument, got 0")
			}
			if v, ok := d.get(args[0]); ok {
				return v, nil
			}
			return arg(args, nil, 1, "", nil), nil
		})
	case "copy":
		return method("dict.copy", func([]any, *kwargs) (any, error) {
			c := newDict()
			for _, k := range d.keys {
				c.set(k, d.m[k])
			}
			return c, nil
		})
	case "update", "pop", "popitem", "setdefault", "clear":
		return unsafeMethod("dict", name)
	}
	return nil
}

func listMethod(l *list, name string) *callable {
	switch name {
	case "index", "count":
		return method("list."+name, func(args []any, kw *kwargs) (any, error) {
			if len(args) == 0 {
				return nil, fmt.Errorf("%s expected 1 argument, got 0", name)
			}
			n := int64(0)
			for i, it := range l.items {
				if equal(it, args[0]) {
					if name == "index" {
						return int64(i), nil
					}
					n++
				}
			}
			if name == "index" {
				return nil, fmt.Errorf("%s is not in list", repr(args[0]))
			}
			return n, nil
		})
	case "copy":
		return method("list.copy", func([]any, *kwargs) (any, error) {
			return newList(append([]any(nil), l.items...)...), nil
		})
	case "append":
		// llama.cpp's Jinja engine (llama-server) lets templates grow a
		// list (Kimi K2's queue of tool call ids); the list is the
		// render's own, and each item is charged to its limits.
		return &callable{name: "list.append", fn: func(e *evaluator, args []any, _ *kwargs) (any, error) {
			if len(args) != 1 {
				return nil, fmt.Errorf("list.append() takes exactly one argument (%d given)", len(args))
			}
			if err := e.charge(16); err != nil {
				return nil, err
			}
			l.items = append(l.items, args[0])
			return nil, nil
		}}
	case "pop":
		// As llama-server allows: pop() or pop(index), Python's way.
		return method("list.pop", func(args []any, _ *kwargs) (any, error) {
			if len(args) > 1 {
				return nil, fmt.Errorf("list.pop() takes at most 1 argument (%d given)", len(args))
			}
			if len(l.items) == 0 {
				return nil, fmt.Errorf("pop from empty list")
			}
			i := int64(len(l.items) - 1)
			if len(args) == 1 {
				n, ok := asInt(args[0])
				if !ok {
					return nil, fmt.Errorf("'%s' object cannot be interpreted as an integer", typeName(args[0]))
				}
				if n < 0 {
					n += int64(len(l.items))
				}
				if n < 0 || n >= int64(len(l.items)) {
					return nil, fmt.Errorf("pop index out of range")
				}
				i = n
			}
			v := l.items[i]
			l.items = append(l.items[:i:i], l.items[i+1:]...)
			return v, nil
		})
	case "extend", "insert", "remove", "reverse", "sort", "clear":
		return unsafeMethod("list", name)
	}
	return nil
}

// unsafeMethod refuses to change a value in place, as transformers'
// ImmutableSandboxedEnvironment does.
func unsafeMethod(typ, name string) *callable {
	return method(typ+"."+name, func([]any, *kwargs) (any, error) {
		return nil, fmt.Errorf("access to attribute '%s' of '%s' object is unsafe", name, typ)
	})
}

// pyFormat is str.format with "{}", "{0}" and "{name}" fields; format
// specs and conversions are not supported.
func pyFormat(s string, args []any, kw *kwargs) (any, error) {
	var b strings.Builder
	auto := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '}' {
			if i+1 < len(s) && s[i+1] == '}' {
				i++
			}
			b.WriteByte('}')
			continue
		}
		if c != '{' {
			b.WriteByte(c)
			continue
		}
		if i+1 < len(s) && s[i+1] == '{' {
			b.WriteByte('{')
			i++
			continue
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return nil, fmt.Errorf("single '{' encountered in format string")
		}
		field := s[i+1 : i+j]
		i += j
		if strings.ContainsAny(field, ":!") {
			return nil, fmt.Errorf("format specs are not supported in str.format")
		}
		var v any
		switch n, err := strconv.Atoi(field); {
		case field == "":
			if auto >= len(args) {
				return nil, fmt.Errorf("replacement index %d out of range", auto)
			}
			v = args[auto]
			auto++
		case err == nil:
			if n < 0 || n >= len(args) {
				return nil, fmt.Errorf("replacement index %d out of range", n)
			}
			v = args[n]
		default:
			x, ok := kw.get(field)
			if !ok {
				return nil, fmt.Errorf("KeyError: %s", reprString(field))
			}
			v = x
		}
		b.WriteString(toStr(v))
	}
	return b.String(), nil
}
