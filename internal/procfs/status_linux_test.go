package procfs

import "testing"

// The peak RSS resets to the RSS of the moment, and grows with what is
// touched after.
func TestResetPeakRSS(t *testing.T) {
	if _, ok := SelfStatusBytes("VmRSS:"); !ok {
		t.Fatal("cannot read this process's VmRSS")
	}
	rss, ok := ResetPeakRSS()
	if !ok {
		t.Skip("no /proc/self/clear_refs here")
	}
	buf := make([]byte, 64<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	peak, ok := SelfStatusBytes("VmHWM:")
	if !ok || peak < rss+32<<20 {
		t.Errorf("peak %d after touching 64 MiB from an RSS of %d (ok %v)", peak, rss, ok)
	}
	if buf[4096] != 1 {
		t.Fatal("unreachable")
	}
}
