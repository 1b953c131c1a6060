// Package clierr holds the error kinds the top level maps to exit codes.
package clierr

import (
	"errors"
	"fmt"
)

// UsageError is a bad flag, argument or value: exit code 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a UsageError. Messages name the flag and the fix, e.g.
// "--flows 0: must be between 1 and 256".
func Usagef(format string, a ...any) error { return &UsageError{Msg: fmt.Sprintf(format, a...)} }

// ErrInterrupted is returned (wrapped) when the user stopped a run: exit 130.
// What was measured so far has been written before it is returned.
var ErrInterrupted = errors.New("interrupted")

// ExitCode maps an error to the process exit code.
func ExitCode(err error) int {
	var ue *UsageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrInterrupted):
		return 130
	case errors.As(err, &ue):
		return 2
	default:
		return 1
	}
}

// StopAtOnce is a command annotation (Annotations[StopAnnotation]): the
// command only reads files and computes (report, compare, export), holds
// nothing to clean up, and is ended at once by Ctrl-C (exit 130) instead of
// being asked to stop through its context.
const (
	StopAnnotation = "cnibench/stop"
	StopAtOnce     = "at-once"
)
