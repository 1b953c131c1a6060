//go:build !linux || !(386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64)

package cidrfilter

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
)

var errNotSupportedOnOS = fmt.Errorf("%w on %s/%s (the BPF egress filter needs little-endian Linux)", ErrNotSupported, runtime.GOOS, runtime.GOARCH)

// Filter is the BPF egress filter; unavailable on this platform.
type Filter struct{}

// Probe always reports ErrNotSupported on this platform.
func Probe(Kind) error { return errNotSupportedOnOS }

// Load always fails with ErrNotSupported on this platform.
func Load(context.Context, Kind, []netip.Prefix, int) (*Filter, LoadStats, error) {
	return nil, LoadStats{}, errNotSupportedOnOS
}

// AttachIngress always fails with ErrNotSupported on this platform.
func (f *Filter) AttachIngress(func(func() error) error, string) error { return errNotSupportedOnOS }

// Detach does nothing on this platform.
func (f *Filter) Detach() error { return nil }

// Reattach always fails with ErrNotSupported on this platform.
func (f *Filter) Reattach() error { return errNotSupportedOnOS }

// Add always fails with ErrNotSupported on this platform.
func (f *Filter) Add(netip.Prefix) error { return errNotSupportedOnOS }

// Remove always fails with ErrNotSupported on this platform.
func (f *Filter) Remove(netip.Prefix) error { return errNotSupportedOnOS }

// Rules is 0 on this platform.
func (f *Filter) Rules() int { return 0 }

// Counters always fails with ErrNotSupported on this platform.
func (f *Filter) Counters() (Counters, error) { return Counters{}, errNotSupportedOnOS }

// KernelBytes always fails with ErrNotSupported on this platform.
func (f *Filter) KernelBytes() (int64, error) { return 0, errNotSupportedOnOS }

// Close does nothing on this platform.
func (f *Filter) Close() error { return nil }

// ProbeLoad always reports ErrNotSupported on this platform.
func ProbeLoad(Kind) error { return errNotSupportedOnOS }
