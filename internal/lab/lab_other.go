//go:build !linux

package lab

import "context"

// Up is not supported on this OS.
func (l *Lab) Up(context.Context, Options) error { return ErrNotSupportedOnOS }

// Down is a no-op on this OS: nothing can be up.
func (l *Lab) Down(context.Context) error { return nil }

// Status is not supported on this OS.
func Status() ([]RunStatus, error) { return nil, ErrNotSupportedOnOS }

// Cleanup is not supported on this OS.
func Cleanup(context.Context, CleanupOptions) (CleanupResult, error) {
	return CleanupResult{}, ErrNotSupportedOnOS
}

// validatePods: the lab builds nothing on this OS.
func validatePods([]PodSpec) error { return nil }
