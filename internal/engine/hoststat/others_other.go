//go:build !linux

package hoststat

import "fmt"

// ReadOthers: other programs are counted from Linux's /proc.
func ReadOthers() Others {
	return Others{Err: fmt.Errorf("counting other programs needs Linux's /proc: %w", ErrNotSupported)}
}

// readOthersBesideSelf: other programs are counted from Linux's /proc.
func readOthersBesideSelf() Others { return ReadOthers() }
