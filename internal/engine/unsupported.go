package engine

import "github.com/cnibench/cnibench/internal"

// ErrNotSupported is wrapped by the error of whatever this OS lacks: the
// client flows, data planes and socket figures need Linux (the `_other.go`
// files of engine/client, engine/server, engine/sock and engine/hoststat),
// so elsewhere a run says so instead of faking a number.
var ErrNotSupported = internal.ErrNotSupported
