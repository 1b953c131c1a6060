package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/hostinfo"
)

// runCgroup is a cgroup v2 directory holding the processes of one spawner,
// so that all of them (and anything they start) can be killed at once with
// cgroup.kill. It is a second line of defence behind the parent-death
// signal; without a usable cgroup v2 hierarchy the spawner works without.
type runCgroup struct {
	dir string
	fd  int // O_PATH|O_DIRECTORY descriptor for clone3's CLONE_INTO_CGROUP
}

// cgroupPrefix names the spawners' cgroups: cnibench-<pid>-<random>.
const cgroupPrefix = "cnibench-"

// newRunCgroup removes the cgroups of dead spawners and creates one for
// this spawner.
func newRunCgroup() (*runCgroup, error) {
	base, err := hostinfo.CgroupDir()
	if err != nil {
		return nil, err
	}
	removeStaleCgroups(base)
	var rnd [3]byte
	if _, err := unix.Getrandom(rnd[:], 0); err != nil {
		return nil, fmt.Errorf("random cgroup name: %w", err)
	}
	dir := filepath.Join(base, fmt.Sprintf("%s%d-%x", cgroupPrefix, os.Getpid(), rnd))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create cgroup: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("cgroup %s has no cgroup.kill (Linux < 5.14?): %w", dir, err)
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("open cgroup: %w", err)
	}
	// Probe clone3's CLONE_INTO_CGROUP with a program that cannot exist:
	// ENOENT comes from the exec in a child that was created in the cgroup.
	_, err = syscall.ForkExec("/nonexistent/cnibench-cgroup-probe", nil,
		&syscall.ProcAttr{Sys: &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}})
	if !errors.Is(err, unix.ENOENT) {
		unix.Close(fd)
		_ = os.Remove(dir)
		return nil, fmt.Errorf("start a process in cgroup %s: %v", dir, err)
	}
	return &runCgroup{dir: dir, fd: fd}, nil
}

// kill kills every process in the cgroup, waits (up to 2 s) until it is
// empty and removes it.
func (c *runCgroup) kill() error {
	defer unix.Close(c.fd)
	return KillCgroup(c.dir)
}

// KillCgroup kills every process in the cgroup v2 directory dir, waits (up
// to 2 s) until it is empty and removes it; a dir already gone is fine.
func KillCgroup(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0o644); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("kill cgroup %s: %w", dir, err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		err := unix.Rmdir(dir)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("remove cgroup %s: %w", dir, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// removeStaleCgroups kills and removes the cgroups of spawners whose
// process is gone (a suite killed with SIGKILL leaves its empty cgroup).
func removeStaleCgroups(base string) {
	ents, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), cgroupPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid <= 0 {
			continue
		}
		if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
			_ = KillCgroup(filepath.Join(base, e.Name()))
		}
	}
}
