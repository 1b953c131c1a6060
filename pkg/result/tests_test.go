package result

import "testing"

func TestIsStream(t *testing.T) {
	for _, tt := range []struct {
		test string
		want bool
	}{
		{TestTCPStream, true},
		{TestUDPStream, true},
		{TestTCPRR, false},
		{TestTCPCRR, false},
		{TestUDPRR, false},
		{TestHTTP, false},
		{TestICMPEcho, false},
		{TestTCPRRLoaded, false}, // its headline is the rr flow's, under load
		{"", false},
		{"TCP_STREAM", false},
		{"sctp_stream", false}, // not a cnibench test, whatever its suffix
		{"stream", false},
	} {
		if got := IsStream(tt.test); got != tt.want {
			t.Errorf("IsStream(%q) = %v, want %v", tt.test, got, tt.want)
		}
	}
}

// Tests lists each name once.
func TestTestsDistinct(t *testing.T) {
	seen := map[string]bool{}
	for _, name := range Tests {
		if name == "" || seen[name] {
			t.Errorf("Tests = %q: %q empty or listed twice", Tests, name)
		}
		seen[name] = true
	}
}
