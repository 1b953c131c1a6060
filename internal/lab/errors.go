package lab

import (
	"fmt"
	"runtime"

	"github.com/cnibench/cnibench/internal"
)

// ErrNotSupported is returned (wrapped) when the machine lacks something a
// datapath or the lab needs. A datapath that cannot run is recorded as
// skipped with the reason; it does not abort the other datapaths.
var ErrNotSupported = internal.ErrNotSupported

// ErrNotSupportedOnOS is returned by every entry point on systems other than
// Linux.
var ErrNotSupportedOnOS = fmt.Errorf("%w on %s", ErrNotSupported, runtime.GOOS)

// UnsupportedError names the missing feature and why it is missing.
// errors.Is(err, ErrNotSupported) matches it.
type UnsupportedError struct {
	Feature string // e.g. "netkit device"
	Reason  string // e.g. "kernel has no netkit support (create netkit link: operation not supported)"
}

func (e *UnsupportedError) Error() string {
	if e.Reason == "" {
		return e.Feature + " not supported"
	}
	return e.Feature + " not supported: " + e.Reason
}

// Is indicates that UnsupportedError is ErrNotSupported.
func (e *UnsupportedError) Is(target error) bool { return target == ErrNotSupported }
