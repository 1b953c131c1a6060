// Package streams defines the standard streams commands write to.
package streams

import "io"

// IOStreams: program output goes to Out, progress and status to ErrOut.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}
