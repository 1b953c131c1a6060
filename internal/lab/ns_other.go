//go:build !linux

package lab

import (
	"os/exec"
)

// NS is a named network namespace created by the lab (Linux only).
type NS struct {
	Name string
}

// Path returns the namespace's bind mount.
func (n *NS) Path() string { return NetnsDir + "/" + n.Name }

// Fd is -1 on this OS.
func (n *NS) Fd() int { return -1 }

// Do is not supported on this OS.
func (n *NS) Do(func() error) error { return ErrNotSupportedOnOS }

// Start is not supported on this OS.
func (n *NS) Start(*exec.Cmd) error { return ErrNotSupportedOnOS }

// ReadSysctl is not supported on this OS.
func (n *NS) ReadSysctl(string) (string, error) { return "", ErrNotSupportedOnOS }

// ConntrackCount is not supported on this OS.
func (n *NS) ConntrackCount() (int, error) { return 0, ErrNotSupportedOnOS }
