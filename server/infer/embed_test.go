package infer

import (
	"math"
	"testing"
)

func TestRenormalize(t *testing.T) {
	e := Renormalize([]float32{3, 4})
	if math.Abs(float64(e[0])-0.6) > 1e-7 || math.Abs(float64(e[1])-0.8) > 1e-7 {
		t.Fatalf("renormalize: %v", e)
	}
	if z := Renormalize([]float32{0, 0}); z[0] != 0 || z[1] != 0 {
		t.Fatalf("zero vector: %v", z)
	}
}
