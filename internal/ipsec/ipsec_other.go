//go:build !linux

package ipsec

import (
	"context"
	"fmt"
	"runtime"
)

// errOS is what every kernel or namespace operation returns off Linux.
func errOS() error {
	return fmt.Errorf("%w: IPsec tunnels need Linux (xfrm, network namespaces), not %s", ErrNotSupported, runtime.GOOS)
}

// ProbeKernel is not supported on this OS.
func ProbeKernel(alg Algorithm) error { return errOS() }

// ProbeUserspace is not supported on this OS.
func ProbeUserspace() error { return errOS() }

// StartUserspace is not supported on this OS.
func StartUserspace(context.Context, int, UserspaceConfig) (func() error, error) {
	return nil, errOS()
}
