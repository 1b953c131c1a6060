package egress

import "testing"

func TestSelfStatusBytes(t *testing.T) {
	if _, ok := selfStatusBytes("VmRSS:"); !ok {
		t.Error("cannot read this process's VmRSS")
	}
}
