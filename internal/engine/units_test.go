package engine

import "testing"

func TestParseRate(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"0", 0, true}, {"10G", 10e9, true}, {"1Gbit", 1e9, true}, {"500M", 500e6, true},
		{"20k", 20e3, true}, {"2.5g", 2.5e9, true}, {"100 bit/s", 100, true}, {"1e3", 1000, true},
		{"5k/s", 5000, true}, {"", 0, false}, {"fast", 0, false}, {"-1G", 0, false}, {"G", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseRate(tt.in)
		if (err == nil) != tt.ok || (tt.ok && got != tt.want) {
			t.Errorf("ParseRate(%q) = %v, %v; want %v ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int
		ok   bool
	}{
		{"1", 1, true}, {"1470", 1470, true}, {"64K", 65536, true}, {"64KiB", 65536, true},
		{"1M", 1 << 20, true}, {"128k", 128 << 10, true}, {"x", 0, false}, {"-5", 0, false}, {"1.5K", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if (err == nil) != tt.ok || (tt.ok && got != tt.want) {
			t.Errorf("ParseSize(%q) = %v, %v; want %v ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}
