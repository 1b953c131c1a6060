package trend

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// noisy returns levels[i]·(1 + sd·N(0,1)) for every point, seeded.
func noisy(seed uint64, sd float64, levels ...float64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]float64, len(levels))
	for i, l := range levels {
		out[i] = l * (1 + sd*rng.NormFloat64())
	}
	return out
}

// steps returns n points at level 100, multiplied by f from each index of at.
func steps(n int, at map[int]float64) []float64 {
	out := make([]float64, n)
	lvl := 100.0
	for i := range out {
		if f, ok := at[i]; ok {
			lvl *= f
		}
		out[i] = lvl
	}
	return out
}

func flagged(z []float64, seed uint64) []int {
	var at []int
	for _, s := range pruneSmall(z, eDivisive(z, DefaultAlpha, DefaultPermutations, seed), DefaultMinShift) {
		at = append(at, s.At)
	}
	return at
}

func TestEDivisiveFindsSteps(t *testing.T) {
	tests := []struct {
		name string
		z    []float64
		want []int
	}{
		{"step down 10% at 12 of 20, 1% noise", noisy(1, 0.01, steps(20, map[int]float64{12: 0.9})...), []int{12}},
		{"step up 5% at 6 of 15, 1% noise", noisy(2, 0.01, steps(15, map[int]float64{6: 1.05})...), []int{6}},
		{"two steps at 10 and 20 of 30", noisy(3, 0.01, steps(30, map[int]float64{10: 0.85, 20: 1.3})...), []int{10, 20}},
		{"step back: down at 8, up at 16 of 24", noisy(4, 0.01, steps(24, map[int]float64{8: 0.8, 16: 1.25})...), []int{8, 16}},
		{"regression in the last 4 of 20", noisy(5, 0.01, steps(20, map[int]float64{16: 0.9})...), []int{16}},
		{"noiseless step at 5 of 10", steps(10, map[int]float64{5: 2}), []int{5}},
		{"flat and noiseless", steps(12, nil), nil},
		{"a 1% step is below the minimum shift", steps(20, map[int]float64{10: 1.01}), nil},
		{"too short", []float64{1, 2}, nil},
		{"empty", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := flagged(tt.z, DefaultSeed); !slices.Equal(got, tt.want) {
				t.Errorf("change points at %v, want %v (series %v)", got, tt.want, tt.z)
			}
		})
	}
}

// TestEDivisiveFlatNoise measures the false-flag rate on flat series of 20
// points with 3 % noise (well above the 2 % minimum shift, so the rate is
// the permutation test's): 100 seeds, at most 8 may flag anything.
// Measured: 5 of 100 seeds flag a change point (5 %, as α = 0.05 predicts;
// go test -run FlatNoise -v ./internal/report/trend prints it).
func TestEDivisiveFlatNoise(t *testing.T) {
	n := 0
	for seed := uint64(0); seed < 100; seed++ {
		if len(flagged(noisy(1000+seed, 0.03, steps(20, nil)...), seed)) > 0 {
			n++
		}
	}
	t.Logf("flat noisy series with a flagged change point: %d of 100", n)
	if n > 8 {
		t.Errorf("%d of 100 flat noisy series flagged a change point, want at most 8 (α = %v)", n, DefaultAlpha)
	}
}

func TestEDivisiveDeterministic(t *testing.T) {
	z := noisy(7, 0.05, steps(25, map[int]float64{9: 0.93})...)
	a := eDivisive(z, DefaultAlpha, DefaultPermutations, 42)
	b := eDivisive(z, DefaultAlpha, DefaultPermutations, 42)
	if !slices.Equal(a, b) {
		t.Errorf("two runs with one seed differ: %v and %v", a, b)
	}
}

func TestBestSplit(t *testing.T) {
	tests := []struct {
		z    []float64
		want int
	}{
		{[]float64{1, 1, 1, 5, 5}, 3},
		{[]float64{5, 1, 1, 1, 1, 1}, 1},
		{[]float64{1, 1, 1, 1, 1, 9}, 5},
		{[]float64{3, 3, 3}, 0},
		{[]float64{3}, 0},
	}
	for _, tt := range tests {
		if got, _ := bestSplit(tt.z); got != tt.want {
			t.Errorf("bestSplit(%v) = %d, want %d", tt.z, got, tt.want)
		}
	}
}

func FuzzEDivisive(f *testing.F) {
	f.Add([]byte{1, 2, 3, 200, 201, 199})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 40 {
			b = b[:40]
		}
		z := make([]float64, len(b))
		for i, v := range b {
			z[i] = float64(v)
		}
		prev := 0
		for _, s := range eDivisive(z, 0.05, 19, 1) {
			if s.At <= prev || s.At >= len(z) || s.P > 0.05 {
				t.Fatalf("bad split %+v of %d values", s, len(z))
			}
			prev = s.At
		}
	})
}
