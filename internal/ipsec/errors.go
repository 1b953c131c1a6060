package ipsec

import "github.com/cnibench/cnibench/internal"

// ErrNotSupported is wrapped by every error that means "this machine cannot
// do it" (no ESP in the kernel, an algorithm missing from its crypto API,
// strongSwan not installed, another OS). The reason follows it in the
// message; callers record the point as skipped with that reason.
var ErrNotSupported = internal.ErrNotSupported
