package chattemplate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// fromJSON decodes JSON into template values, keeping the order of
// object keys.
func fromJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, fmt.Errorf("invalid JSON: data after the value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	if depth > 1000 {
		return nil, fmt.Errorf("JSON nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			d := newDict()
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				d.set(k.(string), v)
			}
			_, err := dec.Token()
			return d, err
		case '[':
			l := &list{}
			for dec.More() {
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				l.items = append(l.items, v)
			}
			_, err := dec.Token()
			return l, err
		}
	case json.Number:
		if !strings.ContainsAny(string(t), ".eE") {
			if n, err := t.Int64(); err == nil {
				return n, nil
			}
		}
		return t.Float64()
	case string, bool, nil:
		return t, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}

// fromGo converts a Go value given in Input.Vars.
func fromGo(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool, string, int64, float64:
		return x, nil
	case int:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case float32:
		return float64(x), nil
	case json.RawMessage:
		return fromJSON(x)
	case []any:
		l := &list{}
		for _, it := range x {
			c, err := fromGo(it)
			if err != nil {
				return nil, err
			}
			l.items = append(l.items, c)
		}
		return l, nil
	case []string:
		l := &list{}
		for _, it := range x {
			l.items = append(l.items, it)
		}
		return l, nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		d := newDict()
		for _, k := range keys {
			c, err := fromGo(x[k])
			if err != nil {
				return nil, err
			}
			d.set(k, c)
		}
		return d, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("template variable of type %T: %w", v, err)
	}
	return fromJSON(b)
}

// jsonOpts are the arguments of Python's json.dumps that tojson takes.
type jsonOpts struct {
	indent      *string
	itemSep     string
	keySep      string
	sortKeys    bool
	ensureASCII bool
}

// fTojson is transformers' tojson: json.dumps(x, ensure_ascii=False,
// indent=None, separators=None, sort_keys=False).
func fTojson(e *evaluator, v any, args []any, kw *kwargs) (any, error) {
	o := jsonOpts{itemSep: ", ", keySep: ": "}
	o.ensureASCII = truthy(arg(nil, kw, 0, "ensure_ascii", false))
	o.sortKeys = truthy(arg(nil, kw, 0, "sort_keys", false))
	switch ind := arg(args, kw, 0, "indent", nil).(type) {
	case nil:
	case string:
		o.indent = &ind
	default:
		n, ok := asInt(ind)
		if !ok {
			return nil, fmt.Errorf("indent must be an int or a string")
		}
		s := strings.Repeat(" ", int(max(0, min(n, 1024))))
		o.indent = &s
		o.itemSep = ","
	}
	if sep, ok := kw.get("separators"); ok && sep != nil {
		l, ok := sep.(*list)
		if !ok || len(l.items) != 2 {
			return nil, fmt.Errorf("separators must be a pair of strings")
		}
		o.itemSep, o.keySep = toStr(l.items[0]), toStr(l.items[1])
	}
	var b strings.Builder
	if err := writeJSON(e, &b, v, &o, 0); err != nil {
		return nil, err
	}
	return b.String(), nil
}

func writeJSON(e *evaluator, b *strings.Builder, v any, o *jsonOpts, level int) error {
	if level > 1000 {
		return fmt.Errorf("circular reference detected")
	}
	if b.Len() > e.lim.maxAlloc {
		return fmt.Errorf("%w: tojson output too large", ErrLimit)
	}
	newline := func(l int) {
		if o.indent != nil {
			b.WriteByte('\n')
			for range l {
				b.WriteString(*o.indent)
			}
		}
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		switch {
		case math.IsNaN(x):
			b.WriteString("NaN")
		case math.IsInf(x, 1):
			b.WriteString("Infinity")
		case math.IsInf(x, -1):
			b.WriteString("-Infinity")
		default:
			b.WriteString(formatFloat(x))
		}
	case string:
		writeJSONString(b, x, o.ensureASCII)
	case *list:
		if len(x.items) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i, it := range x.items {
			if i > 0 {
				b.WriteString(o.itemSep)
			}
			newline(level + 1)
			if err := writeJSON(e, b, it, o, level+1); err != nil {
				return err
			}
		}
		newline(level)
		b.WriteByte(']')
	case *dict:
		if len(x.keys) == 0 {
			b.WriteString("{}")
			return nil
		}
		keys := x.keys
		if o.sortKeys {
			keys = append([]any(nil), keys...)
			if err := sortValues(keys, nil, false); err != nil {
				return err
			}
		}
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(o.itemSep)
			}
			newline(level + 1)
			var ks string
			switch kk := k.(type) {
			case string:
				ks = kk
			case nil:
				ks = "null"
			case bool:
				ks = strconv.FormatBool(kk)
			case int64, float64:
				ks = toStr(kk)
			default:
				return fmt.Errorf("keys must be str, int, float, bool or None, not %s", typeName(k))
			}
			writeJSONString(b, ks, o.ensureASCII)
			b.WriteString(o.keySep)
			if err := writeJSON(e, b, x.m[k], o, level+1); err != nil {
				return err
			}
		}
		newline(level)
		b.WriteByte('}')
	default:
		return fmt.Errorf("Object of type %s is not JSON serializable", typeName(v))
	}
	return nil
}

// writeJSONString writes s quoted as Python's json module does.
func writeJSONString(b *strings.Builder, s string, ensureASCII bool) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r < 0x20 || ensureASCII && r == 0x7f:
				fmt.Fprintf(b, `\u%04x`, r)
			case ensureASCII && r > 0x7f:
				if r > 0xffff {
					r -= 0x10000
					fmt.Fprintf(b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
				} else {
					fmt.Fprintf(b, `\u%04x`, r)
				}
			default:
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}
