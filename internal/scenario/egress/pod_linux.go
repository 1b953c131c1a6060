package egress

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// ownTarget is this process's own network namespace as a local target on
// dev (a pod filtering its own egress).
func ownTarget(dev string) (Target, func(), error) {
	const self = "/proc/self/ns/net"
	fd, err := unix.Open(self, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return Target{}, nil, fmt.Errorf("open %s: %w", self, err)
	}
	return Target{NSPath: self, NSFd: fd, Dev: dev, Local: true, Do: func(f func() error) error { return f() }},
		func() { _ = unix.Close(fd) }, nil
}
