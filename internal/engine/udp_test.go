package engine

import (
	"strings"
	"testing"
)

func TestUDPDatagramSize(t *testing.T) {
	tests := []struct {
		msg, mtu   int
		v6         bool
		want       int
		source     string
		warnSubstr string
	}{
		{0, 1450, false, 1422, "path_mtu", ""}, // VXLAN pod MTU: no fragmentation
		{0, 1500, false, 1472, "path_mtu", ""},
		{0, 1500, true, 1452, "path_mtu", ""},
		{0, 9000, false, 8972, "path_mtu", ""},
		{0, 65536, false, MaxUDPSize, "path_mtu", ""},
		{0, 0, false, 1472, "default", "could not be read"},
		{1000, 1450, false, 1000, "flag", ""},
		{1470, 1450, false, 1470, "flag", "2 IP fragments"},
	}
	for _, tt := range tests {
		got, src, warn := UDPDatagramSize(tt.msg, tt.mtu, tt.v6)
		if got != tt.want || src != tt.source || (tt.warnSubstr == "") != (warn == "") || !strings.Contains(warn, tt.warnSubstr) {
			t.Errorf("UDPDatagramSize(%d, %d, %v) = %d, %q, %q; want %d, %q, warning with %q", tt.msg, tt.mtu, tt.v6, got, src, warn, tt.want, tt.source, tt.warnSubstr)
		}
	}
}

func TestUDPHeaderRoundTrip(t *testing.T) {
	b := make([]byte, UDPStreamHeader)
	PutUDPHeader(b, 0xdeadbeef, 42, 255)
	c, s, f, ok := ParseUDPHeader(b)
	if !ok || c != 0xdeadbeef || s != 42 || f != 255 {
		t.Fatalf("got %x %d %d %v", c, s, f, ok)
	}
	if _, _, _, ok := ParseUDPHeader(b[:UDPRRHeader-1]); ok {
		t.Fatal("a short datagram must not parse")
	}
}

func TestUDPHelloRoundTrip(t *testing.T) {
	h := UDPHello(42, 3)
	tests := []struct {
		name   string
		b      []byte
		cookie uint64
		flow   int
		want   bool
	}{
		{"own", h, 42, 3, true},
		{"other cookie", h, 43, 3, false},
		{"other flow", h, 42, 4, false},
		{"truncated", h[:UDPRRHeader], 42, 3, false},
		{"stream datagram", func() []byte { b := append([]byte(nil), h...); b[UDPOffPhase] = PhaseMeasured; return b }(), 42, 3, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsUDPHello(tt.b, tt.cookie, tt.flow); got != tt.want {
				t.Fatalf("IsUDPHello = %v, want %v", got, tt.want)
			}
		})
	}
}
