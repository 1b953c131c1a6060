package hoststat

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/cnibench/cnibench/internal/hostinfo"
	"github.com/cnibench/cnibench/internal/procfs"
)

// errOwnPIDNamespace: in a pid namespace of its own (a pod), an end sees
// only its own processes.
var errOwnPIDNamespace = errors.New("not in the host's pid namespace: other programs are not visible")

// othersCgroup is the run's cgroup whose processes are left out of the
// count, found and checked once: the process's pid namespace and cgroup do
// not change between windows.
var othersCgroup = sync.OnceValues(func() (string, error) {
	if err := hostPIDs(); err != nil {
		return "", err
	}
	dir, err := ownCgroup()
	if err != nil {
		return "", err
	}
	if isCgroupRoot(dir) {
		return "", fmt.Errorf("this process is in the root cgroup (%s): the run's processes cannot be told from others", dir)
	}
	return dir, nil
})

// hostPIDs is nil when this process sees the host's processes.
func hostPIDs() error {
	host, err := procfs.HostPIDNamespace()
	if err != nil {
		return err
	}
	if !host {
		return errOwnPIDNamespace
	}
	return nil
}

// ReadOthers sums the CPU so far of the host's other programs: every
// user-space process outside this process's cgroup (the run's, in the lab)
// and not one of its ancestors.
func ReadOthers() Others {
	dir, err := othersCgroup()
	if err != nil {
		return Others{Err: err}
	}
	run, err := hostinfo.CgroupPIDs(dir)
	if err != nil {
		return Others{Err: err}
	}
	snap, err := procfs.ReadAll()
	if err != nil {
		return Others{Err: err}
	}
	return othersOf(snap, os.Getpid(), run)
}

// isCgroupRoot reports whether dir is a cgroup v2 hierarchy's root: only
// the root has no cgroup.type file.
func isCgroupRoot(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "cgroup.type"))
	return errors.Is(err, os.ErrNotExist)
}

// readOthersBesideSelf sums the CPU so far of every user-space process
// but this one, its descendants and its ancestors (the idle probe's
// "other programs", before the run's processes exist).
func readOthersBesideSelf() Others {
	if err := hostPIDs(); err != nil {
		return Others{Err: err}
	}
	snap, err := procfs.ReadAll()
	if err != nil {
		return Others{Err: err}
	}
	tree, err := snap.Tree(os.Getpid())
	if err != nil {
		return Others{Err: err}
	}
	mine := map[int]bool{}
	for _, p := range tree {
		mine[p] = true
	}
	return othersOf(snap, os.Getpid(), mine)
}
