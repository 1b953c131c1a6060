package lab

import "testing"

func TestParseSockstatTW(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		err  bool
	}{
		{"sockets: used 5\nTCP: inuse 3 orphan 0 tw 12 alloc 5 mem 1\nUDP: inuse 0 mem 0\n", 12, false},
		{"TCP: inuse 0 orphan 0 tw 0 alloc 0 mem 0\n", 0, false},
		{"TCP: inuse 3 orphan 0\n", 0, true},
		{"TCP: inuse 3 orphan 0 tw x alloc 5\n", 0, true},
		{"UDP: inuse 0 mem 0\n", 0, true},
		{"", 0, true},
	} {
		got, err := parseSockstatTW([]byte(tc.in))
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("parseSockstatTW(%q) = %d, %v; want %d, err %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}
