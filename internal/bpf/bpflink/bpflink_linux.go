package bpflink

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// Close detaches l from its hook and closes it. Links the kernel cannot
// detach explicitly (tracing links: ErrNotSupported) are only closed.
func Close(l link.Link) error {
	var derr error
	if err := l.Detach(); err != nil && !errors.Is(err, ebpf.ErrNotSupported) {
		derr = fmt.Errorf("detach link: %w", err)
	}
	return errors.Join(derr, l.Close())
}

// CloseAll closes every link of links with Close.
func CloseAll(links []link.Link) error {
	var errs []error
	for _, l := range links {
		if l != nil {
			errs = append(errs, Close(l))
		}
	}
	return errors.Join(errs...)
}
