//go:build !linux

package main

import (
	"errors"
	"syscall"
)

// peerbench needs Linux (network namespaces, taskset, /proc, a parent-death
// signal): run refuses other systems before starting anything, so these
// are never reached.
var errNeedsLinux = errors.New("peerbench needs Linux")

func groupAttr(bool) *syscall.SysProcAttr { return nil }

func killGroup(int, syscall.Signal) error { return errNeedsLinux }

func kernelRelease() string { return "" }
