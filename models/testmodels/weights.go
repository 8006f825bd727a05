package testmodels

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"math"

	"github.com/tadpole-llm/tadpole/models/gguf"
)

// rng is SplitMix64: tiny, fast and fully deterministic.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s += 0x9E3779B97F4A7C15
	z := r.s
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// uniform returns a float in [-1, 1).
func (r *rng) uniform() float32 {
	return float32(int32(r.next()>>32)) * (1.0 / (1 << 31))
}

// tensorRNG seeds a generator from the model seed and the tensor name, so
// every tensor's values are independent of the others and of their order.
func tensorRNG(seed int64, name string) *rng {
	h := fnv.New64a()
	h.Write([]byte(name))
	r := &rng{s: uint64(seed) ^ h.Sum64()}
	r.next()
	return r
}

// f16 converts a float32 to IEEE half precision, rounding to nearest even.
func f16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	e := int(b>>23) & 0xFF
	mant := b & 0x7FFFFF
	if e == 0xFF { // Inf or NaN
		if mant != 0 {
			return sign | 0x7E00
		}
		return sign | 0x7C00
	}
	exp := e - 127 + 15
	switch {
	case exp >= 31:
		return sign | 0x7C00
	case exp <= 0: // subnormal half (or zero)
		if exp < -10 {
			return sign
		}
		full := mant | 0x800000
		shift := uint(14 - exp)
		m := full >> shift
		rem := full & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && m&1 == 1) {
			m++
		}
		return sign | uint16(m)
	}
	h := uint32(exp)<<10 | mant>>13
	rem := mant & 0x1FFF
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, up to Inf: both correct
	}
	return sign | uint16(h)
}

// f16ToF32 converts an IEEE half to float32.
func f16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1F
	mant := uint32(h & 0x3FF)
	switch {
	case exp == 0x1F:
		return math.Float32frombits(sign | 0x7F800000 | mant<<13)
	case exp == 0:
		f := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			f = -f
		}
		return f
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}

// encodeF32 encodes float32 values as a tensor of type t (F32 or F16; the
// deterministic models are small and exact, so they are not quantized).
func encodeF32(vals []float32, t gguf.TensorType) []byte {
	switch t {
	case gguf.F32:
		b := make([]byte, 4*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		return b
	case gguf.F16:
		b := make([]byte, 2*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint16(b[2*i:], f16(v))
		}
		return b
	}
	panic("testmodels: encodeF32 of " + t.String())
}

// q4Nibbles maps a random byte to two 4-bit quants in 1..15 (a 0 nibble
// becomes 8, a zero weight), so the values (q-8)*d are symmetric around 0.
var q4Nibbles = func() (t [256]byte) {
	for i := range t {
		lo, hi := byte(i&15), byte(i>>4)
		if lo == 0 {
			lo = 8
		}
		if hi == 0 {
			hi = 8
		}
		t[i] = hi<<4 | lo
	}
	return t
}()

// randomFill returns a Fill callback streaming n pseudo-random values with
// standard deviation about std, encoded as type t. The values depend only
// on seed and name, and every call of the callback writes the same bytes.
func randomFill(t gguf.TensorType, n uint64, std float32, seed int64, name string) (func(io.Writer) error, error) {
	switch t {
	case gguf.F32, gguf.F16, gguf.Q8_0, gguf.Q4_0:
	default:
		return nil, fmt.Errorf("tensor type %s not supported (F32, F16, Q8_0, Q4_0)", t)
	}
	return func(w io.Writer) error {
		r := tensorRNG(seed, name)
		const chunk = 256 << 10
		buf := make([]byte, 0, chunk+64)
		flush := func() error {
			_, err := w.Write(buf)
			buf = buf[:0]
			return err
		}
		// A uniform value in [-a, a) has standard deviation a/sqrt(3).
		a := std * float32(math.Sqrt(3))
		switch t {
		case gguf.F32:
			for range n {
				buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(a*r.uniform()))
				if len(buf) >= chunk {
					if err := flush(); err != nil {
						return err
					}
				}
			}
		case gguf.F16:
			for range n {
				buf = binary.LittleEndian.AppendUint16(buf, f16(a*r.uniform()))
				if len(buf) >= chunk {
					if err := flush(); err != nil {
						return err
					}
				}
			}
		case gguf.Q8_0:
			// q uniform in -127..127: standard deviation about 73.3*d.
			d := std / 73.3
			for range n / 32 {
				buf = binary.LittleEndian.AppendUint16(buf, f16(d*(1+0.25*r.uniform())))
				for range 4 {
					x := r.next()
					for range 8 {
						q := byte(x)
						if q == 0x80 { // -128: keep the range symmetric
							q = 0
						}
						buf = append(buf, q)
						x >>= 8
					}
				}
				if len(buf) >= chunk {
					if err := flush(); err != nil {
						return err
					}
				}
			}
		case gguf.Q4_0:
			// q-8 in -7..7 (0 twice as likely): standard deviation about 4.18*d.
			d := std / 4.18
			for range n / 32 {
				buf = binary.LittleEndian.AppendUint16(buf, f16(d*(1+0.25*r.uniform())))
				for range 2 {
					x := r.next()
					for range 8 {
						buf = append(buf, q4Nibbles[byte(x)])
						x >>= 8
					}
				}
				if len(buf) >= chunk {
					if err := flush(); err != nil {
						return err
					}
				}
			}
		}
		return flush()
	}, nil
}

// constF32 returns the data of an F32 tensor of n copies of v.
func constF32(n int, v float32) []byte {
	vals := make([]float32, n)
	for i := range vals {
		vals[i] = v
	}
	return encodeF32(vals, gguf.F32)
}
