package grammar

import (
	"math/big"
	"strconv"
	"strings"
)

// maxMagnitude is the largest integer the grammars write (maxDigits nines).
const maxMagnitude = 9_999_999_999_999_999

// unbounded marks an open end of a range.
const unbounded = int64(-1)

// uintRange returns a GBNF expression (a group) for the decimal numbers
// without leading zeros in [lo, hi]; hi == unbounded means up to
// maxDigits digits. lo >= 0.
func uintRange(lo, hi int64) string {
	if hi == unbounded || hi > maxMagnitude {
		hi = maxMagnitude
	}
	var alts []string
	for d := len(strconv.FormatInt(lo, 10)); d <= maxDigits; d++ {
		first := int64(0)
		if d > 1 {
			first = pow10(d - 1)
		}
		last := pow10(d) - 1
		a, b := max(lo, first), min(hi, last)
		if a > b {
			break
		}
		if d > 1 && a == first && hi == maxMagnitude {
			// Every longer number is in range: one item covers them all.
			alts = append(alts, "[1-9] "+repeat("[0-9]", d-1, maxDigits-1))
			break
		}
		alts = append(alts, sameLength(strconv.FormatInt(a, 10), strconv.FormatInt(b, 10)))
	}
	return group(alts)
}

// sameLength returns a sequence matching the digit strings of one length
// between a and b (a <= b, both of that length).
func sameLength(a, b string) string {
	if a == b {
		return literal(a)
	}
	n := len(a) - 1
	if a[0] == b[0] {
		return literal(a[:1]) + " " + sameLength(a[1:], b[1:])
	}
	var alts []string
	lowFrom, highTo := a[0], b[0]
	if strings.Trim(a[1:], "0") != "" {
		alts = append(alts, literal(a[:1])+" "+sameLength(a[1:], strings.Repeat("9", n)))
		lowFrom++
	}
	var high string
	if strings.Trim(b[1:], "9") != "" {
		high = literal(b[:1]) + " " + sameLength(strings.Repeat("0", n), b[1:])
		highTo--
	}
	if lowFrom <= highTo {
		mid := digitClass(lowFrom, highTo)
		if n > 0 {
			mid += " " + repeat("[0-9]", n, n)
		}
		alts = append(alts, mid)
	}
	if high != "" {
		alts = append(alts, high)
	}
	return group(alts)
}

func digitClass(from, to byte) string {
	if from == to {
		return literal(string(from))
	}
	return "[" + string(from) + "-" + string(to) + "]"
}

// group joins alternatives into one parenthesised item.
func group(alts []string) string {
	if len(alts) == 1 && !strings.Contains(alts[0], " ") {
		return alts[0]
	}
	return "( " + strings.Join(alts, " | ") + " )"
}

func pow10(n int) int64 {
	p := int64(1)
	for range n {
		p *= 10
	}
	return p
}

// numberRange returns an expression for the decimals with at most n
// fraction digits (n == 0: integers) between lo and hi, which are scaled
// by 10^n (lo = 25, n = 1 means 2.5); nil means open. Numbers are written
// without exponent; ok is false when nothing is in range. Bounds beyond
// maxMagnitude are clamped.
func numberRange(lo, hi *big.Int, n int) (expr string, ok bool) {
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
	limit := new(big.Int).Mul(big.NewInt(maxMagnitude), scale)
	neg := func(x *big.Int) *big.Int {
		if x == nil {
			return nil
		}
		return new(big.Int).Neg(x)
	}
	if lo != nil && lo.Cmp(neg(limit)) < 0 {
		lo = nil
	}
	if hi != nil && hi.Cmp(limit) > 0 {
		hi = nil
	}
	if lo == nil {
		lo = neg(limit)
	}
	if hi == nil {
		hi = limit
	}
	if lo.Cmp(hi) > 0 {
		return "", false
	}
	zero := new(big.Int)
	unit := big.NewInt(1)
	if n > 0 {
		unit = zero // a negative zero part ("-0.5") starts at magnitude 0
	}
	var alts []string
	if lo.Sign() < 0 {
		// Negative numbers: "-" then a magnitude in [max(unit, -hi), -lo].
		from := neg(hi)
		if from.Cmp(unit) < 0 {
			from = unit
		}
		alts = append(alts, `"-" `+magnitude(from, neg(lo), scale, n))
	}
	if hi.Sign() >= 0 {
		from := lo
		if from.Sign() < 0 {
			from = zero
		}
		alts = append(alts, magnitude(from, hi, scale, n))
	}
	return group(alts), true
}

// magnitude matches unsigned decimals in [a, b] (scaled by scale = 10^n,
// 0 <= a <= b) with at most n fraction digits.
func magnitude(a, b, scale *big.Int, n int) string {
	ai, af := splitScaled(a, scale, n)
	bi, bf := splitScaled(b, scale, n)
	if n == 0 {
		return uintRange(ai, bi)
	}
	if ai == bi {
		return group([]string{literal(strconv.FormatInt(ai, 10)) + " " + fracBetween(af, bf, n)})
	}
	alts := []string{literal(strconv.FormatInt(ai, 10)) + " " + fracAtLeast(af, n)}
	if ai+1 <= bi-1 {
		alts = append(alts, uintRange(ai+1, bi-1)+" "+fracAny(n))
	}
	alts = append(alts, literal(strconv.FormatInt(bi, 10))+" "+fracAtMost(bf, n))
	return group(alts)
}

// splitScaled splits x/scale into its integral part and its n fraction
// digits (trailing zeros removed).
func splitScaled(x, scale *big.Int, n int) (int64, string) {
	q, r := new(big.Int).QuoRem(x, scale, new(big.Int))
	if n == 0 {
		return q.Int64(), ""
	}
	f := r.String()
	f = strings.Repeat("0", n-len(f)) + f
	return q.Int64(), strings.TrimRight(f, "0")
}

func fracAny(n int) string { return `( "." ` + repeat("[0-9]", 1, n) + ` )?` }

// fracAtLeast matches an optional fraction whose digits are >= f.
func fracAtLeast(f string, n int) string {
	if f == "" {
		return fracAny(n)
	}
	return `"." ` + digitsAtLeast(f, n)
}

// fracAtMost matches an optional fraction whose digits are <= f.
func fracAtMost(f string, n int) string {
	return `( "." ` + digitsAtMost(f, n, true) + ` )?`
}

// fracBetween matches an optional fraction with digits in [a, b].
func fracBetween(a, b string, n int) string {
	if a == "" {
		return fracAtMost(b, n)
	}
	return `"." ` + digitsBetween(a, b, n)
}

// The digits* functions match digit strings s of length at most n that
// compare with f as fractions do: s and f padded with zeros.

// digitsAtLeast: s >= f, f non-zero (so s is not empty).
func digitsAtLeast(f string, n int) string {
	if strings.Trim(f, "0") == "" {
		return repeat("[0-9]", 0, n)
	}
	var alts []string
	if f[0] < '9' {
		alts = append(alts, seq(digitClass(f[0]+1, '9'), repeat("[0-9]", 0, n-1)))
	}
	alts = append(alts, seq(literal(f[:1]), digitsAtLeast(f[1:], n-1)))
	return group(alts)
}

// digitsAtMost: s <= f; nonEmpty asks for at least one digit.
func digitsAtMost(f string, n int, nonEmpty bool) string {
	if strings.Trim(f, "0") == "" {
		if nonEmpty {
			return repeat(`"0"`, 1, n)
		}
		return repeat(`"0"`, 0, n)
	}
	var alts []string
	if f[0] > '0' {
		alts = append(alts, seq(digitClass('0', f[0]-1), repeat("[0-9]", 0, n-1)))
	}
	alts = append(alts, seq(literal(f[:1]), digitsAtMost(f[1:], n-1, false)))
	g := group(alts)
	if !nonEmpty {
		g = "( " + strings.Join(alts, " | ") + " )?"
	}
	return g
}

// digitsBetween: a <= s <= b, a non-zero and a <= b.
func digitsBetween(a, b string, n int) string {
	if strings.Trim(a, "0") == "" {
		return digitsAtMost(b, n, false)
	}
	if a[0] == b[0] {
		return seq(literal(a[:1]), digitsBetween(a[1:], b[1:], n-1))
	}
	alts := []string{seq(literal(a[:1]), digitsAtLeast(a[1:], n-1))}
	if a[0]+1 <= b[0]-1 {
		alts = append(alts, seq(digitClass(a[0]+1, b[0]-1), repeat("[0-9]", 0, n-1)))
	}
	alts = append(alts, seq(literal(b[:1]), digitsAtMost(b[1:], n-1, false)))
	return group(alts)
}

// seq joins the non-empty items of a sequence.
func seq(items ...string) string {
	var out []string
	for _, it := range items {
		if it != "" {
			out = append(out, it)
		}
	}
	return strings.Join(out, " ")
}
