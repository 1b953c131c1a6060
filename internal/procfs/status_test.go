package procfs

import "testing"

func TestStatusBytes(t *testing.T) {
	const status = "Name:\tcnibench\nVmHWM:\t    2048 kB\nVmRSS:\t 1000 kB\nBad:\t x kB\nNeg:\t -5 kB\nHuge:\t 9223372036854775807 kB\n"
	for _, tt := range []struct {
		key  string
		want int64
		ok   bool
	}{
		{"VmHWM:", 2048 * 1024, true},
		{"VmRSS:", 1000 * 1024, true},
		{"Bad:", 0, false},
		{"Neg:", 0, false},
		{"Huge:", 0, false},
		{"VmSwap:", 0, false},
	} {
		got, ok := StatusBytes(status, tt.key)
		if got != tt.want || ok != tt.ok {
			t.Errorf("StatusBytes(%q) = %d, %v; want %d, %v", tt.key, got, ok, tt.want, tt.ok)
		}
	}
}

func TestMemAvailable(t *testing.T) {
	mi := "MemTotal:       24614312 kB\nMemFree:         1000 kB\nMemAvailable:   23000000 kB\nBuffers: 10 kB\n"
	if v, err := MemAvailable(mi); err != nil || v != 23000000*1024 {
		t.Errorf("MemAvailable = %d, %v", v, err)
	}
	for _, bad := range []string{"", "MemTotal: 1 kB\n", "MemAvailable: lots\n", "MemAvailable: -5 kB\n"} {
		if _, err := MemAvailable(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func FuzzMemAvailable(f *testing.F) {
	f.Add("MemAvailable:   23000000 kB\n")
	f.Add("VmHWM:\t 1 kB\nMemAvailable: 9 kB")
	f.Fuzz(func(t *testing.T, s string) {
		if v, err := MemAvailable(s); err == nil && v < 0 {
			t.Fatalf("negative %d", v)
		}
	})
}
