// Package sock is how the workload engine's two ends move data: raw,
// blocking sockets, one per flow, each on its own OS thread, outside Go's
// netpoller (sock_linux.go: dial, listen, read and write without the
// scheduler's bookkeeping where a call cannot sleep), and the threads they
// block on (threads.go: GOMAXPROCS reserved per blocked flow, and the
// Yielder that keeps sysmon from taking a flow's P on every system call).
// Outside Linux only Shutdown, Close and PathMTU exist (PathMTU fails with
// ErrNotSupported): no flow opens a raw socket there.
package sock

import "github.com/cnibench/cnibench/internal"

// ErrNotSupported is wrapped by what needs Linux's sockets.
var ErrNotSupported = internal.ErrNotSupported
