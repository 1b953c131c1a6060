package nscpu

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// NetnsInode returns the inode of the network namespace that fd refers to
// (a /proc/PID/ns/net or /run/netns/NAME file, or a netns.NsHandle): the
// key of Read's map.
func NetnsInode(fd int) (uint64, error) {
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil {
		return 0, fmt.Errorf("netns inode: fstatfs fd %d: %w", fd, err)
	}
	if fs.Type != unix.NSFS_MAGIC {
		return 0, fmt.Errorf("netns inode: fd %d is not a namespace file (filesystem type %#x)", fd, fs.Type)
	}
	// Kernels before 4.11 lack NS_GET_NSTYPE (ENOTTY): then any namespace
	// passes.
	t, err := unix.IoctlRetInt(fd, unix.NS_GET_NSTYPE)
	switch {
	case err == nil && t != unix.CLONE_NEWNET:
		return 0, fmt.Errorf("netns inode: fd %d is a namespace of type %#x, not a network namespace", fd, t)
	case err != nil && err != unix.ENOTTY:
		return 0, fmt.Errorf("netns inode: fd %d: %w", fd, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, fmt.Errorf("netns inode: fstat fd %d: %w", fd, err)
	}
	return st.Ino, nil
}
