//go:build !linux || !(386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64)

package tclb

import "fmt"

// LB is not available on this platform.
type LB struct{}

// Load reports ErrNotSupported: the TC load balancer needs Linux and a
// little-endian CPU (only that BPF object is committed).
func Load([]Service, int) (*LB, error) {
	return nil, fmt.Errorf("%w: TC load balancing needs Linux on a little-endian CPU", ErrNotSupported)
}

func (*LB) Attach(func(func() error) error, string) error { return ErrNotSupported }
func (*LB) Detach() error                                 { return nil }
func (*LB) Counters() (Counters, error)                   { return Counters{}, ErrNotSupported }
func (*LB) Close() error                                  { return nil }

// Probe reports ErrNotSupported on this platform.
func Probe() error {
	return fmt.Errorf("%w: TC load balancing needs Linux on a little-endian CPU", ErrNotSupported)
}
