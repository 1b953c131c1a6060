package l4lb

import (
	"testing"
	"time"
)

func TestParseProcCPU(t *testing.T) {
	line := "4242 (cnibench (x) y) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 75 0 0 20 0 9 0 12345 0 0"
	d, err := parseProcCPU(line)
	if err != nil || d != 3250*time.Millisecond {
		t.Fatalf("got %v, %v; want 3.25s", d, err)
	}
	for _, bad := range []string{"", "1 (x) S 1 2", "1 x S", "1 (x) S 1 2 3 4 5 6 7 8 9 a b 0"} {
		if _, err := parseProcCPU(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func FuzzParseProcCPU(f *testing.F) {
	f.Add("4242 (cnibench) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 75 0 0 20 0 9 0 12345 0 0")
	f.Add("1 ((() S")
	f.Fuzz(func(t *testing.T, s string) {
		if d, err := parseProcCPU(s); err == nil && d < 0 {
			t.Fatalf("negative time %v", d)
		}
	})
}
