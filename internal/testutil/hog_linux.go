package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/procfs"
)

// StartOrphanHog runs a busy loop of one core that stands for another
// program: neither a descendant of this process (its shell exits at once,
// leaving the loop an orphan) nor in its cgroup. The loop ends by itself
// when this process is gone, and is killed when the test ends. It returns
// the loop's pid.
func StartOrphanHog(t testing.TB) int {
	t.Helper()
	loop := fmt.Sprintf("while kill -0 %d 2>/dev/null; do :; done", os.Getpid())
	out, err := exec.Command("sh", "-c", "sh -c '"+loop+"' >/dev/null 2>&1 & echo $!").Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("hog pid %q: %v", out, err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			if !running(pid) {
				return
			}
		}
		t.Errorf("hog %d still running after SIGKILL (state %q)", pid, procState(pid))
	})
	return pid
}

// running reports whether pid names a process that has not exited. A
// killed orphan is a zombie until its new parent reaps it, and a parent
// that never reaps (a minimal root's init, a subreaper that does not
// wait) leaves it one: it answers kill(pid, 0) but runs no more.
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	switch procState(pid) {
	case "", "Z", "X", "x":
		return false
	}
	return true
}

// procState is the state letter of /proc/PID/stat, or "" when it cannot be
// read (the process is gone).
func procState(pid int) string {
	st, err := procfs.ReadStat(pid)
	if err != nil {
		return ""
	}
	return string(st.State)
}
