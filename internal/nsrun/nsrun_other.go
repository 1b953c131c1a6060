//go:build !linux

package nsrun

import (
	"errors"

	"github.com/vishvananda/netns"
)

var errOS = errors.New("network namespaces are not supported on this OS")

// Do is not supported outside Linux.
func Do(netns.NsHandle, func() error) error { return errOS }

// Scratch is not supported outside Linux.
func Scratch(func() error) error { return errOS }

// NewScratch is not supported outside Linux.
func NewScratch() (netns.NsHandle, error) { return -1, errOS }

// NewNamed is not supported outside Linux.
func NewNamed(string) (netns.NsHandle, error) { return -1, errOS }
