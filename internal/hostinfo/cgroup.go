package hostinfo

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// CgroupDir returns this process's own cgroup v2 directory: the v2 mount
// plus the "0::" path of /proc/self/cgroup. Inside a container with its own
// cgroup namespace that is the container's cgroup, mounted at its root.
func CgroupDir() (string, error) {
	mounts, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return "", fmt.Errorf("read mounts: %w", err)
	}
	mnt := CgroupMount(string(mounts))
	if mnt == "" {
		return "", errors.New("no cgroup v2 hierarchy mounted")
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", fmt.Errorf("read /proc/self/cgroup: %w", err)
	}
	p, ok := CgroupPath(string(self))
	if !ok {
		return "", errors.New("this process has no cgroup v2 path")
	}
	return filepath.Join(mnt, p), nil
}

// CgroupMount returns the first cgroup2 mount point of a /proc/self/mounts
// listing, or "".
func CgroupMount(mounts string) string {
	for _, l := range strings.Split(mounts, "\n") {
		f := strings.Fields(l)
		if len(f) >= 3 && f[2] == "cgroup2" {
			return f[1]
		}
	}
	return ""
}

// CgroupPath returns the cgroup v2 path ("0::PATH") of a /proc/PID/cgroup
// listing.
func CgroupPath(procCgroup string) (string, bool) {
	for _, l := range strings.Split(procCgroup, "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok && strings.HasPrefix(p, "/") {
			return p, true
		}
	}
	return "", false
}

// CgroupCPU is a cgroup's CPU time so far (cpu.stat's usage_usec: user and
// system time of every process that ran in it, including the exited ones
// and its child cgroups'), and the cgroup's identity.
type CgroupCPU struct {
	// ID is the cgroup directory's inode number, the kernel's cgroup id:
	// two readers with one ID share one cgroup, whatever their mounts.
	ID    uint64
	Usage time.Duration
}

// ParseCPUStat returns the usage_usec of a cgroup v2 cpu.stat file.
func ParseCPUStat(r io.Reader) (time.Duration, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok || k != "usage_usec" {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 63)
		if err != nil || n > uint64(1<<63-1)/uint64(time.Microsecond) {
			return 0, fmt.Errorf("usage_usec %q is not a count of microseconds", v)
		}
		return time.Duration(n) * time.Microsecond, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("no usage_usec line")
}
