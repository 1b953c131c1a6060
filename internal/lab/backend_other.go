//go:build !linux

package lab

import (
	"context"
	"fmt"

	"github.com/cnibench/cnibench/internal/backend"
)

// Backend is the local lab; on this OS it cannot be brought up (network
// namespaces are Linux's), but its options validate and describe
// themselves so that the CLI builds and says why.
type Backend struct{ o BackendOptions }

// NewBackend validates o and returns the lab backend.
func NewBackend(o BackendOptions) (*Backend, error) {
	if err := o.Validate(); err != nil {
		return nil, &backend.OptionError{Msg: err.Error()}
	}
	return &Backend{o: o.withDefaults()}, nil
}

// Name is BackendName.
func (b *Backend) Name() string { return BackendName }

// Config is the lab's part of the results' config.
func (b *Backend) Config() map[string]string { return b.o.config() }

// Open fails: the lab needs Linux.
func (b *Backend) Open(context.Context, backend.Events) (func(), error) {
	return nil, fmt.Errorf("the lab needs Linux network namespaces: %w", ErrNotSupportedOnOS)
}

// Up fails: the lab needs Linux.
func (b *Backend) Up(context.Context, backend.Spec) (backend.Deployment, error) {
	return nil, fmt.Errorf("the lab needs Linux network namespaces: %w", ErrNotSupportedOnOS)
}
