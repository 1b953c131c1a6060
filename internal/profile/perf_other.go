//go:build !linux

package profile

import (
	"fmt"
	"runtime"
)

// Session samples the CPUs until Stop; only Linux has one.
type Session struct{}

// Probe reports that sampling needs Linux.
func Probe() error {
	return fmt.Errorf("profile: CPU profiling %w: perf_event_open is Linux-only (this is %s)", ErrNotSupported, runtime.GOOS)
}

// Start fails: sampling needs Linux.
func Start(o Options) (*Session, error) {
	if _, err := o.frequency(); err != nil {
		return nil, err
	}
	return nil, Probe()
}

// Pause is a no-op outside Linux.
func (s *Session) Pause() error { return Probe() }

// Resume is a no-op outside Linux.
func (s *Session) Resume() error { return Probe() }

// Stop fails outside Linux.
func (s *Session) Stop() (*Profile, error) { return nil, Probe() }
