package lab

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/hostinfo"
	"golang.org/x/sys/unix"
)

// TestSpawner: a child starts inside the namespace, pinned to one CPU, and
// dies with the spawner's thread (its parent-death signal), so a child can
// never outlive the process that started it.
func TestSpawner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates network namespaces")
	}
	runID, err := NewRunID()
	if err != nil {
		t.Fatal(err)
	}
	ns, err := createNS(NSName("p"+runID, "test", RoleNode1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.close(); _ = removeNS(ns.Name) })
	var st unix.Stat_t
	if err := unix.Stat(ns.Path(), &st); err != nil {
		t.Fatal(err)
	}
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		t.Fatal(err)
	}
	cpu := -1
	for i := 0; i < 1024 && cpu < 0; i++ {
		if all.IsSet(i) {
			cpu = i
		}
	}
	var one unix.CPUSet
	one.Set(cpu)

	sp, err := NewSpawner()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sp.Close)
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := sp.Start(ns, cmd, &one); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	link, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("net:[%d]", st.Ino); link != want {
		t.Errorf("child in %s, want %s", link, want)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("Cpus_allowed_list:\t%d\n", cpu); !strings.Contains(string(status), want) {
		t.Errorf("child not pinned to CPU %d:\n%s", cpu, status)
	}
	cg, cgErr := sp.Cgroup()
	if cg == "" {
		t.Logf("no cgroup: %v", cgErr)
	} else {
		self, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", cmd.Process.Pid))
		if err != nil || !strings.Contains(string(self), "/"+filepath.Base(cg)+"\n") {
			t.Errorf("child's cgroups %q (%v), want it in %s", self, err, cg)
		}
	}
	// This process's own affinity is untouched.
	var after unix.CPUSet
	if err := unix.SchedGetaffinity(0, &after); err != nil || after != all {
		t.Errorf("caller's affinity changed: %v (%v)", after, err)
	}
	// Still running after other goroutines come and go.
	select {
	case err := <-waited:
		t.Fatalf("child ended early: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	sp.Close()
	select {
	case err := <-waited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Errorf("child ended with %v, want SIGKILL", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("child still runs 5 s after the spawner closed")
	}
	if cg != "" {
		if _, err := os.Stat(cg); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cgroup %s left after Close (stat: %v)", cg, err)
		}
	}
	if err := sp.Start(ns, exec.Command("true"), nil); !errors.Is(err, ErrSpawnerClosed) {
		t.Errorf("Start after Close: %v, want ErrSpawnerClosed", err)
	}
}

// The cgroup of a spawner whose process died (SIGKILL) is removed by the
// next spawner; a live one's is kept.
func TestStaleCgroupsRemoved(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates cgroups")
	}
	base, err := hostinfo.CgroupDir()
	if err != nil {
		t.Skipf("no cgroup v2: %v", err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(base, fmt.Sprintf("%s%d-test", cgroupPrefix, dead.Process.Pid))
	live := filepath.Join(base, fmt.Sprintf("%s%d-test", cgroupPrefix, os.Getpid()))
	for _, d := range []string{stale, live} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Skipf("cannot create cgroups here: %v", err)
		}
		t.Cleanup(func() { _ = unix.Rmdir(d) })
	}
	sp, err := NewSpawner()
	if err != nil {
		t.Fatal(err)
	}
	sp.Close()
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale cgroup %s kept (stat: %v)", stale, err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a live process's cgroup was removed: %v", err)
	}
}
