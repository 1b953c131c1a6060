//go:build !linux || !(386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64)

package nscpu

import "fmt"

// Accountant is not available on this platform.
type Accountant struct{}

func errPlatform() error {
	return fmt.Errorf("%w: per-namespace receive accounting needs Linux on a little-endian CPU", ErrNotSupported)
}

// Start reports ErrNotSupported: the accountant needs Linux and a
// little-endian CPU (only that BPF object is committed).
func Start() (*Accountant, error) { return nil, errPlatform() }

// Probe reports ErrNotSupported on this platform.
func Probe() error { return errPlatform() }

func (*Accountant) Read() (map[uint64]Usage, error) { return nil, errPlatform() }
func (*Accountant) Totals() (Totals, error)         { return Totals{}, errPlatform() }
func (*Accountant) Close() error                    { return nil }
