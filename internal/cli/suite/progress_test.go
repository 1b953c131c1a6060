package suite

import (
	"bytes"
	"testing"
)

func TestProgressWriter(t *testing.T) {
	var b bytes.Buffer
	p := &progressWriter{w: &b, tty: true}
	p.Write([]byte("lab: building\n"))
	p.Write([]byte("[1/2] a · ETA 1s\n"))
	p.Write([]byte("[2/2] b · ETA -\n"))
	p.Write([]byte("netkit: skipped\n"))
	p.Done()
	want := "lab: building\n\r\033[K[1/2] a · ETA 1s\r\033[K[2/2] b · ETA -\nnetkit: skipped\n"
	if b.String() != want {
		t.Fatalf("tty progress:\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	plain := &progressWriter{w: &b}
	plain.Write([]byte("[1/2] a\n"))
	plain.Done()
	if b.String() != "[1/2] a\n" {
		t.Fatalf("plain progress: %q", b.String())
	}
}
