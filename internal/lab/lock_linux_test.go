package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A second suite on the same host is refused with the first one's pid; the
// lock is free again once the first releases it.
func TestSuiteLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "suite.lock")
	release, err := acquireSuiteLock(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = acquireSuiteLock(path)
	var busy *BusyError
	if !errors.As(err, &busy) || busy.PID != os.Getpid() {
		t.Fatalf("second lock: %v, want BusyError naming pid %d", err, os.Getpid())
	}
	if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("pid %d", os.Getpid())) || strings.Contains(msg, "\n") {
		t.Errorf("message %q: want one line naming the pid", msg)
	}
	release()
	release2, err := acquireSuiteLock(path)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	release2()
}

func TestCPUWarning(t *testing.T) {
	for n, want := range map[int]bool{1: true, 2: false, 8: false} {
		if got := cpuWarning(n) != ""; got != want {
			t.Errorf("cpuWarning(%d) = %q, want a warning: %v", n, cpuWarning(n), want)
		}
	}
	if !strings.Contains(cpuWarning(1), "1 CPU(s) for the 2 busy processes") {
		t.Errorf("cpuWarning(1) = %q", cpuWarning(1))
	}
}

func TestPinCPUs(t *testing.T) {
	c, s, err := pinCPUs(PinNone)
	if c != nil || s != nil || err != nil {
		t.Errorf("none: %v %v %v", c, s, err)
	}
	c, s, err = pinCPUs(PinSame)
	if err != nil || c == nil || *c != *s || c.Count() != 1 {
		t.Errorf("same: %v %v %v", c, s, err)
	}
	c, s, err = pinCPUs(PinSplit)
	if runtime.NumCPU() < 2 {
		if err == nil {
			t.Error("split accepted with one CPU")
		}
		return
	}
	if err != nil || c.Count() != 1 || s.Count() != 1 || *c == *s {
		t.Errorf("split: %v %v %v", c, s, err)
	}
}
