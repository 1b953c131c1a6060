package engine

import "github.com/cnibench/cnibench/internal"

// ErrNotSupported is wrapped by the error of whatever this OS lacks: the
// client flows, data planes and socket figures need Linux (the `_other.go`
// files), so elsewhere a run says so instead of faking a number.
var ErrNotSupported = internal.ErrNotSupported
