//go:build !linux

package engine

import "fmt"

// readOthers: other programs are counted from Linux's /proc.
func readOthers() othersTicks {
	return othersTicks{Err: fmt.Errorf("counting other programs needs Linux's /proc: %w", ErrNotSupported)}
}

// readOthersBesideSelf: other programs are counted from Linux's /proc.
func readOthersBesideSelf() othersTicks { return readOthers() }
