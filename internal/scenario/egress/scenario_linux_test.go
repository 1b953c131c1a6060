package egress

import "testing"

func TestStatusBytes(t *testing.T) {
	const status = "Name:\tcnibench\nVmHWM:\t    2048 kB\nVmRSS:\t 1000 kB\nBad:\t x kB\n"
	tests := []struct {
		key  string
		want int64
		ok   bool
	}{
		{"VmHWM:", 2048 * 1024, true},
		{"VmRSS:", 1000 * 1024, true},
		{"Bad:", 0, false},
		{"VmSwap:", 0, false},
	}
	for _, tt := range tests {
		got, ok := statusBytes(status, tt.key)
		if got != tt.want || ok != tt.ok {
			t.Errorf("statusBytes(%q) = %d, %v; want %d, %v", tt.key, got, ok, tt.want, tt.ok)
		}
	}
	if _, ok := selfStatusBytes("VmRSS:"); !ok {
		t.Error("cannot read this process's VmRSS")
	}
}
