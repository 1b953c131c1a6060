package suitecmd

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
	p.Write([]byte("netkit: skipped: no netkit\n"))
	p.Write([]byte("[3/3] c · ETA -\n"))
	p.Write([]byte("done\n"))
	p.Done()
	// The skip notice is transient on a terminal: the final table lists it.
	want := "lab: building\n\r\033[K[1/2] a · ETA 1s\r\033[K[2/2] b · ETA -\r\033[Knetkit: skipped: no netkit\r\033[K[3/3] c · ETA -\ndone\n"
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

// In-place lines longer than the terminal are cut: a wrapped line would
// leave its first part behind at every update.
func TestProgressWriterFitsTerminal(t *testing.T) {
	var b bytes.Buffer
	p := &progressWriter{w: &b, tty: true, width: 20}
	p.Write([]byte("[1/2] veth-routing, cross-node, tcp_rr · ETA 1s\n"))
	p.Done()
	want := "\r\033[K[1/2] veth-routing…\n"
	if b.String() != want {
		t.Fatalf("got %q, want %q", b.String(), want)
	}
}
