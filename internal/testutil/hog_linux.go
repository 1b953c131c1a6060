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
			if syscall.Kill(pid, 0) != nil {
				return
			}
		}
		t.Errorf("hog %d still running after SIGKILL", pid)
	})
	return pid
}
