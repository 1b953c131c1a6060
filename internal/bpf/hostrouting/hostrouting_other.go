//go:build !linux || !(386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64)

package hostrouting

import (
	"fmt"
	"net/netip"
	"runtime"
)

// Attach modes reported by (*Program).AttachMode.
const (
	ModeTCX    = "tcx"
	ModeLegacy = "tc-clsact"
)

var errNotSupportedOnOS = fmt.Errorf("%w on %s/%s (BPF host routing needs little-endian Linux)", ErrNotSupported, runtime.GOOS, runtime.GOARCH)

// Program is the host-routing program; unavailable on this platform.
type Program struct{}

// Probe always reports ErrNotSupported on this platform.
func Probe() error { return errNotSupportedOnOS }

// Load always fails with ErrNotSupported on this platform.
func Load(Options) (*Program, error) { return nil, errNotSupportedOnOS }

// Bare reports false on this platform.
func (p *Program) Bare() bool { return false }

// RedirectHost reports false on this platform.
func (p *Program) RedirectHost() bool { return false }

// SetPolicy always fails with ErrNotSupported on this platform.
func (p *Program) SetPolicy(src netip.Prefix, _ bool) error {
	return fmt.Errorf("set hostrouting policy %s: %w", src, errNotSupportedOnOS)
}

// CTEntries always fails with ErrNotSupported on this platform.
func (p *Program) CTEntries() (int, error) {
	return 0, fmt.Errorf("count hostrouting CT entries: %w", errNotSupportedOnOS)
}

// AttachFromPod always fails with ErrNotSupported on this platform.
func (p *Program) AttachFromPod(ifindex int) error {
	return fmt.Errorf("attach hostrouting to pod veth ifindex %d: %w", ifindex, errNotSupportedOnOS)
}

// AttachFromWire always fails with ErrNotSupported on this platform.
func (p *Program) AttachFromWire(ifindex int) error {
	return fmt.Errorf("attach hostrouting to uplink ifindex %d: %w", ifindex, errNotSupportedOnOS)
}

// AttachMode reports ModeTCX, the mode the program would use.
func (p *Program) AttachMode() string { return ModeTCX }

// Counters always fails with ErrNotSupported on this platform.
func (p *Program) Counters() (Counters, error) {
	return Counters{}, fmt.Errorf("read hostrouting counters: %w", errNotSupportedOnOS)
}

// Close does nothing on this platform.
func (p *Program) Close() error { return nil }
