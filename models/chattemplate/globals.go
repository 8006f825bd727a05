package chattemplate

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// globals are the functions every template sees: jinja2's and those
// transformers adds (raise_exception, strftime_now).
var globals = map[string]any{
	"range":           &callable{name: "range", fn: gRange},
	"dict":            &callable{name: "dict", fn: gDict(false)},
	"namespace":       &callable{name: "namespace", fn: gDict(true)},
	"joiner":          &callable{name: "joiner", fn: gJoiner},
	"raise_exception": &callable{name: "raise_exception", fn: gRaise},
	"strftime_now":    &callable{name: "strftime_now", fn: gStrftimeNow},
}

func gRange(e *evaluator, args []any, _ *kwargs) (any, error) {
	var n [3]int64
	n[2] = 1
	for i, a := range args {
		v, ok := asInt(a)
		if !ok || i > 2 {
			return nil, fmt.Errorf("range() takes up to 3 integer arguments")
		}
		n[i] = v
	}
	start, stop, step := n[0], n[1], n[2]
	switch len(args) {
	case 0:
		return nil, fmt.Errorf("range expected at least 1 argument, got 0")
	case 1:
		start, stop = 0, n[0]
	}
	if step == 0 {
		return nil, fmt.Errorf("range() arg 3 must not be zero")
	}
	count := int64(0)
	if step > 0 && stop > start {
		count = (stop - start + step - 1) / step
	} else if step < 0 && stop < start {
		count = (start - stop - step - 1) / -step
	}
	if count > int64(e.lim.maxAlloc) {
		return nil, fmt.Errorf("%w: range of %d items", ErrLimit, count)
	}
	if err := e.charge(16 * int(count)); err != nil {
		return nil, err
	}
	l := &list{items: make([]any, count)}
	for i := range l.items {
		l.items[i] = start + int64(i)*step
	}
	return l, nil
}

// gDict makes dict(**kw), or namespace(**kw) and namespace(mapping).
func gDict(namespace bool) func(*evaluator, []any, *kwargs) (any, error) {
	return func(_ *evaluator, args []any, kw *kwargs) (any, error) {
		d := newDict()
		d.namespace = namespace
		for _, a := range args {
			src, ok := a.(*dict)
			if !ok {
				return nil, fmt.Errorf("dict() positional argument must be a mapping")
			}
			for _, k := range src.keys {
				d.set(k, src.m[k])
			}
		}
		for i := 0; i < kw.len(); i++ {
			d.set(kw.names[i], kw.vals[i])
		}
		return d, nil
	}
}

func gJoiner(_ *evaluator, args []any, kw *kwargs) (any, error) {
	sep := toStr(arg(args, kw, 0, "sep", ", "))
	used := false
	return &callable{name: "joiner", fn: func(*evaluator, []any, *kwargs) (any, error) {
		if !used {
			used = true
			return "", nil
		}
		return sep, nil
	}}, nil
}

func gRaise(_ *evaluator, args []any, kw *kwargs) (any, error) {
	return nil, &Exception{Message: toStr(arg(args, kw, 0, "message", ""))}
}

func gStrftimeNow(e *evaluator, args []any, kw *kwargs) (any, error) {
	f, ok := arg(args, kw, 0, "format", nil).(string)
	if !ok {
		return nil, fmt.Errorf("strftime_now() needs a format string")
	}
	return strftime(e.now(), f), nil
}

// strftime formats t like Python's (C library's) strftime, with glibc's
// "%-d" flag for no padding.
func strftime(t time.Time, f string) string {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 >= len(f) {
			b.WriteByte(f[i])
			continue
		}
		i++
		pad := true
		if f[i] == '-' && i+1 < len(f) {
			pad = false
			i++
		}
		num := func(n, width int) {
			s := strconv.Itoa(n)
			if pad {
				s = strings.Repeat("0", max(0, width-len(s))) + s
			}
			b.WriteString(s)
		}
		hour12 := t.Hour() % 12
		if hour12 == 0 {
			hour12 = 12
		}
		switch f[i] {
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		case 'A':
			b.WriteString(t.Weekday().String())
		case 'b', 'h':
			b.WriteString(t.Month().String()[:3])
		case 'B':
			b.WriteString(t.Month().String())
		case 'c':
			b.WriteString(t.Format("Mon Jan _2 15:04:05 2006"))
		case 'd':
			num(t.Day(), 2)
		case 'e':
			b.WriteString(fmt.Sprintf("%2d", t.Day()))
		case 'f':
			num(t.Nanosecond()/1000, 6)
		case 'H':
			num(t.Hour(), 2)
		case 'I':
			num(hour12, 2)
		case 'j':
			num(t.YearDay(), 3)
		case 'm':
			num(int(t.Month()), 2)
		case 'M':
			num(t.Minute(), 2)
		case 'p':
			if t.Hour() < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		case 'S':
			num(t.Second(), 2)
		case 'u':
			wd := int(t.Weekday())
			if wd == 0 {
				wd = 7
			}
			num(wd, 1)
		case 'w':
			num(int(t.Weekday()), 1)
		case 'U':
			num((t.YearDay()+6-int(t.Weekday()))/7, 2)
		case 'W':
			num((t.YearDay()+6-(int(t.Weekday())+6)%7)/7, 2)
		case 'x':
			b.WriteString(t.Format("01/02/06"))
		case 'X':
			b.WriteString(t.Format("15:04:05"))
		case 'y':
			num(t.Year()%100, 2)
		case 'Y':
			num(t.Year(), 1)
		case 'z':
			b.WriteString(t.Format("-0700"))
		case 'Z':
			name, _ := t.Zone()
			b.WriteString(name)
		case 'F':
			b.WriteString(t.Format("2006-01-02"))
		case 'T':
			b.WriteString(t.Format("15:04:05"))
		case 'D':
			b.WriteString(t.Format("01/02/06"))
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			if !pad {
				b.WriteByte('-')
			}
			b.WriteByte(f[i])
		}
	}
	return b.String()
}
