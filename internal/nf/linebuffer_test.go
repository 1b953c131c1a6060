package nf

import "testing"

func TestLineBuffer(t *testing.T) {
	var b LineBuffer
	b.Write("*filter")
	b.Write("-A", "CNB-EGRESS", "-d", "240.0.0.0/24", "-j", "DROP")
	b.Write()
	if got, want := string(b.Bytes()), "*filter\n-A CNB-EGRESS -d 240.0.0.0/24 -j DROP\n\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if b.Lines() != 3 {
		t.Fatalf("Lines %d, want 3", b.Lines())
	}
}
