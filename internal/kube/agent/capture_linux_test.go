package agent

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/testutil"
	"github.com/cnibench/cnibench/internal/testutil/nstest"
)

// TestRunCaptureLoopback captures on lo of a scratch namespace while a TCP
// connection there carries the engine's payload, ends the capture as
// SIGTERM would, and checks that the namespace is gone afterwards: no
// descriptor or thread of this process refers to it any more.
func TestRunCaptureLoopback(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	var ino uint64
	t.Cleanup(func() { // registered first: runs after the namespace's own cleanup
		if ino != 0 {
			if refs := netnsRefs(ino); len(refs) > 0 {
				t.Errorf("the scratch namespace net:[%d] is still referred to by %v", ino, refs)
			}
		}
	})
	do, _ := nstest.LoopbackNS(t)
	var ln net.Listener
	err := do(func() error {
		st, err := os.Stat("/proc/thread-self/ns/net")
		if err != nil {
			return err
		}
		ino = st.Sys().(*syscall.Stat_t).Ino
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if len(netnsRefs(ino)) == 0 {
		t.Fatalf("the namespace's handle is not among the descriptors referring to net:[%d]: the final check would prove nothing", ino)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{})
	type result struct {
		rep Capture
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := RunCapture(ctx, "lo", time.Minute, CaptureOptions{Do: do}, func() { close(ready) })
		done <- result{rep, err}
	}()
	select {
	case <-ready:
	case r := <-done:
		t.Fatalf("capture did not start: %v", r.err)
	}
	if err := sendPayload(do, ln, 256<<10); err != nil {
		t.Fatal(err)
	}
	cancel() // as SIGTERM does
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	rep := r.rep
	t.Logf("%+v", rep)
	if rep.Schema != SchemaCapture || rep.Iface != "lo" || !rep.Interrupted || rep.Frames == 0 ||
		rep.MarkerFrames == 0 || rep.ByProtocol["tcp"] == 0 || rep.MarkerByProtocol["tcp"] == 0 ||
		rep.KernelDrops != 0 || rep.ScannedFraction != 1 || rep.Error != "" {
		t.Errorf("got %+v", rep)
	}
}

// sendPayload sends n bytes of marked payload over a new connection to ln
// (created inside the namespace) and waits until they are all received.
func sendPayload(do func(func() error) error, ln net.Listener, n int) error {
	got := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- err
			return
		}
		defer c.Close()
		m, err := io.Copy(io.Discard, c)
		if err == nil && m != int64(n) {
			err = fmt.Errorf("received %d of %d bytes", m, n)
		}
		got <- err
	}()
	var c net.Conn
	if err := do(func() (err error) { c, err = net.Dial("tcp", ln.Addr().String()); return err }); err != nil {
		return err
	}
	buf := make([]byte, n)
	engine.FillPayload(buf)
	_, err := c.Write(buf)
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return <-got
}

// netnsRefs lists this process's descriptors and threads that refer to
// the network namespace with inode ino.
func netnsRefs(ino uint64) []string {
	want := fmt.Sprintf("net:[%d]", ino)
	var refs []string
	for _, pattern := range []string{"/proc/self/fd/*", "/proc/self/task/*/ns/net"} {
		paths, _ := filepath.Glob(pattern)
		for _, p := range paths {
			if l, err := os.Readlink(p); err == nil && l == want {
				refs = append(refs, p)
			}
		}
	}
	return refs
}
