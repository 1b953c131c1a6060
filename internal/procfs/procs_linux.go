package procfs

import (
	"fmt"
	"os"
	"strconv"
)

// ReadStat reads and parses /proc/<pid>/stat.
func ReadStat(pid int) (Stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, err
	}
	st, err := ParseStat(string(b))
	if err != nil {
		return Stat{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return st, nil
}

// ReadAll reads the stat of every process in /proc. A process that ends
// while it is read, or whose line does not parse, is left out.
func ReadAll() (Snapshot, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list /proc: %w", err)
	}
	s := Snapshot{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := ReadStat(pid); err == nil {
			s[pid] = st
		}
	}
	return s, nil
}

// initPIDNamespace is the inode of the kernel's initial pid namespace
// (PROC_PID_INIT_INO, include/linux/proc_ns.h).
const initPIDNamespace = "pid:[4026531836]"

// HostPIDNamespace reports whether this process is in the host's (the
// initial) pid namespace, where /proc shows every process of the host; in
// a container's own pid namespace it shows the container's only.
func HostPIDNamespace() (bool, error) {
	l, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return false, fmt.Errorf("read this process's pid namespace: %w", err)
	}
	return l == initPIDNamespace, nil
}
