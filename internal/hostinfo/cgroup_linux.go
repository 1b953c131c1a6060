package hostinfo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ReadCgroupCPU reads dir's cpu.stat. cgroup v2 keeps it whether or not
// the cpu controller is enabled (in a hybrid hierarchy too).
func ReadCgroupCPU(dir string) (CgroupCPU, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return CgroupCPU{}, fmt.Errorf("cgroup %s: %w", dir, err)
	}
	f, err := os.Open(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return CgroupCPU{}, fmt.Errorf("cgroup CPU: %w", err)
	}
	defer f.Close()
	u, err := ParseCPUStat(f)
	if err != nil {
		return CgroupCPU{}, fmt.Errorf("%s: %w", f.Name(), err)
	}
	return CgroupCPU{ID: st.Ino, Usage: u}, nil
}

// CgroupPIDs lists the processes of the cgroup v2 directory dir and of its
// child cgroups (cgroup.procs).
func CgroupPIDs(dir string) (map[int]bool, error) {
	pids := map[int]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p != dir && errors.Is(err, fs.ErrNotExist) {
				return nil // a child cgroup removed meanwhile
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if err != nil {
			if p != dir && errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return fmt.Errorf("cgroup processes: %w", err)
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
				pids[pid] = true
			}
		}
		return nil
	})
	return pids, err
}
