package maglev

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func names(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("10.1.%d.%d:8080", i/200, i%200))
	}
	return out
}

func TestTableDeterministicAndOrderFree(t *testing.T) {
	b := names(7)
	t1, s1, err := Table(b, 251)
	if err != nil {
		t.Fatal(err)
	}
	rev := slices.Clone(b)
	slices.Reverse(rev)
	t2, s2, err := Table(rev, 251)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(t1, t2) || !slices.Equal(s1, s2) {
		t.Error("the table depends on the order backends are given in")
	}
	if !slices.IsSorted(s1) {
		t.Errorf("sorted backends %v not sorted", s1)
	}
}

func TestTableSpread(t *testing.T) {
	for _, tc := range []struct {
		n, m     int
		maxRatio float64 // largest share / smallest share
	}{
		{1, 7, 1}, {3, 251, 1.05}, {10, DefaultSize, 1.01}, {100, DefaultSize, 1.05}, {1000, 65537, 1.1},
	} {
		table, _, err := Table(names(tc.n), tc.m)
		if err != nil {
			t.Fatal(err)
		}
		if len(table) != tc.m {
			t.Fatalf("n=%d m=%d: %d slots", tc.n, tc.m, len(table))
		}
		sh := Shares(table, tc.n)
		lo, hi := slices.Min(sh), slices.Max(sh)
		if lo == 0 || float64(hi)/float64(lo) > tc.maxRatio {
			t.Errorf("n=%d m=%d: shares %d..%d, ratio above %.2f", tc.n, tc.m, lo, hi, tc.maxRatio)
		}
		total := 0
		for _, s := range sh {
			total += s
		}
		if total != tc.m {
			t.Errorf("n=%d m=%d: %d slots assigned", tc.n, tc.m, total)
		}
	}
}

// TestTableDisruption: removing one of n backends moves its own slots and
// few others (Maglev's minimal disruption; ideal 1/n).
func TestTableDisruption(t *testing.T) {
	const n, m = 20, DefaultSize
	b := names(n)
	before, sb, err := Table(b, m)
	if err != nil {
		t.Fatal(err)
	}
	gone := b[5]
	after, sa, err := Table(append(slices.Clone(b[:5]), b[6:]...), m)
	if err != nil {
		t.Fatal(err)
	}
	moved := 0
	for s := range m {
		was, is := sb[before[s]], sa[after[s]]
		if was != is {
			moved++
		}
		if is == gone {
			t.Fatalf("slot %d still maps to the removed backend", s)
		}
	}
	share := float64(moved) / m
	if share < 1.0/n || share > 2.0/n {
		t.Errorf("%.1f %% of slots moved after removing 1 of %d backends; want between %.1f %% and %.1f %%", 100*share, n, 100.0/n, 200.0/n)
	}
}

func TestTableErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		backends []string
		m        int
		want     string
	}{
		{"no backends", nil, 7, "no backends"},
		{"not prime", names(3), 100, "must be a prime"},
		{"too small", names(10), 7, "must be a prime between"},
		{"too large", names(3), 1<<20 + 7, "must be a prime between"},
		{"duplicate", []string{"a", "b", "a"}, 7, `backend "a" listed twice`},
		{"empty name", []string{"a", ""}, 7, "empty backend name"},
	} {
		_, _, err := Table(tc.backends, tc.m)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

func FuzzTable(f *testing.F) {
	f.Add("a,b,c", uint16(7))
	f.Add("10.0.0.1:80", uint16(13))
	f.Fuzz(func(t *testing.T, list string, m uint16) {
		// Small tables and few backends keep every execution short: an
		// execution still running when -fuzztime ends fails the run.
		b := strings.Split(list, ",")
		if len(b) > 64 {
			b = b[:64]
		}
		table, sorted, err := Table(b, int(m%4096))
		if err != nil {
			return
		}
		sh := Shares(table, len(sorted))
		for i, s := range sh {
			if s == 0 {
				t.Fatalf("backend %q holds no slot of %d", sorted[i], m)
			}
		}
	})
}
