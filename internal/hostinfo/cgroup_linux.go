package hostinfo

import (
	"fmt"
	"os"
	"path/filepath"
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
