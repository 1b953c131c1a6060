package nscpu

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// NetnsInode returns the inode of the network namespace that fd refers to
// (a /proc/PID/ns/net or /run/netns/NAME file, or a netns.NsHandle): the
// key of Read's map.
func NetnsInode(fd int) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, fmt.Errorf("netns inode: fstat fd %d: %w", fd, err)
	}
	// Older kernels lack NS_GET_NSTYPE (ENOTTY); only a definite answer
	// that fd is another kind of namespace, or no namespace, is an error.
	t, err := unix.IoctlRetInt(fd, unix.NS_GET_NSTYPE)
	switch {
	case err == nil && t != unix.CLONE_NEWNET:
		return 0, fmt.Errorf("netns inode: fd %d is a namespace of type %#x, not a network namespace", fd, t)
	case err != nil && err != unix.ENOTTY:
		return 0, fmt.Errorf("netns inode: fd %d: %w", fd, err)
	}
	return st.Ino, nil
}
