// Package wireguard encrypts the lab's node-to-node pod traffic with
// WireGuard, in the kernel (a "wireguard" link configured with wgctrl) or in
// userspace (wireguard-go on a TUN device). See README.md for what each one
// costs and what is measured under the label wireguard-userspace.
//
// Everything that creates a device or a socket runs in the network
// namespace of the calling OS thread: callers run it inside a node's
// namespace (lab.NS.Do, nsrun.Do, or a whole process started there such as
// `cnibench wg-node`). Features the machine lacks are reported as errors
// wrapping ErrNotSupported, which callers record as "skipped: <reason>".
package wireguard

import (
	"fmt"
	"runtime"

	"github.com/cnibench/cnibench/internal"
)

// ErrNotSupported is wrapped by every error that says this machine (kernel
// or OS) cannot do what was asked; the rest of the message says why.
var ErrNotSupported = internal.ErrNotSupported

// errOS is returned by the entry points that need Linux.
var errOS = fmt.Errorf("wireguard lab devices: %w on %s", ErrNotSupported, runtime.GOOS)

// Labels of the two implementations, as results record them.
const (
	LabelKernel    = "wireguard"
	LabelUserspace = "wireguard-userspace"
)
