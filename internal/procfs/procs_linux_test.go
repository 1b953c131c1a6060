package procfs

import (
	"os"
	"strings"
	"testing"
)

// This process is in the snapshot with its parent, its tree has a CPU
// time, and a process that does not exist is an error.
func TestReadAll(t *testing.T) {
	for i := 0; i < 3e7; i++ {
		_ = strings.Repeat("x", i%3)
	}
	s, err := ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	self, ok := s[os.Getpid()]
	if !ok || self.PPID != os.Getppid() || self.StartTime == 0 {
		t.Fatalf("this process in the snapshot: %+v, %v (parent %d)", self, ok, os.Getppid())
	}
	if ticks, err := s.TreeTicks(os.Getpid(), true); err != nil || ticks == 0 {
		t.Errorf("own CPU %d ticks, %v", ticks, err)
	}
	if anc := s.Ancestors(os.Getpid()); len(anc) == 0 || anc[0] != os.Getppid() {
		t.Errorf("ancestors %v do not start with the parent %d", anc, os.Getppid())
	}
	if host, err := HostPIDNamespace(); err != nil {
		t.Error(err)
	} else if b, _ := os.ReadFile("/proc/1/comm"); host && len(b) == 0 {
		t.Error("in the host's pid namespace, but /proc/1/comm is unreadable")
	}
	if _, err := ReadStat(1 << 30); err == nil {
		t.Error("a process that does not exist has a stat")
	}
}
