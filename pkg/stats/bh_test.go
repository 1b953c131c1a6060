package stats

import (
	"math"
	"testing"
)

// Against R's p.adjust(p, method = "BH").
func TestBenjaminiHochberg(t *testing.T) {
	for _, tc := range []struct {
		name    string
		p, want []float64
	}{
		{"R p.adjust", []float64{0.01, 0.04, 0.03, 0.005}, []float64{0.02, 0.04, 0.04, 0.02}},
		{"ties", []float64{0.008, 0.008, 0.5}, []float64{0.012, 0.012, 0.5}},
		{"capped at 1", []float64{0.9, 0.8}, []float64{0.9, 0.9}},
		{"one", []float64{0.03}, []float64{0.03}},
		{"NaN left out of m", []float64{0.01, math.NaN(), 0.02}, []float64{0.02, math.NaN(), 0.02}},
		{"R p.adjust, 8", []float64{0.001, 0.008, 0.039, 0.041, 0.042, 0.06, 0.074, 0.205},
			[]float64{0.008, 0.032, 0.0672, 0.0672, 0.0672, 0.08, 0.08457142857142857, 0.205}},
		{"none", nil, []float64{}},
	} {
		got := BenjaminiHochberg(tc.p)
		if len(got) != len(tc.want) {
			t.Fatalf("%s: %d q-values, want %d", tc.name, len(got), len(tc.want))
		}
		for i := range got {
			if math.IsNaN(tc.want[i]) != math.IsNaN(got[i]) || !math.IsNaN(got[i]) && math.Abs(got[i]-tc.want[i]) > 1e-12 {
				t.Errorf("%s: q = %v, want %v", tc.name, got, tc.want)
				break
			}
		}
	}
}
