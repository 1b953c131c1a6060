package cluster

import "testing"

func TestReadyWriter(t *testing.T) {
	w := newReadyWriter()
	for _, s := range []string{"warn", "ing: x\nrea", "dy\n", "ready\nlast"} {
		w.Write([]byte(s))
	}
	select {
	case <-w.ready:
	default:
		t.Fatal("ready not seen")
	}
	if got := w.other(); got != "warning: x; ready; last" {
		t.Errorf("other %q", got)
	}
}
