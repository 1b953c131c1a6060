//go:build !linux

package proxies

import (
	"context"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/scenario"
)

// ErrNotSupported is wrapped by the skip reason of a point this machine
// or datapath cannot run; it is the backend's, so that the suite records
// a point whose Prepare returns it as skipped.
var ErrNotSupported = backend.ErrNotSupported

type state struct{}

// probe: the proxies run in lab namespaces, which are Linux only.
func probe(string) error { return lab.ErrNotSupportedOnOS }

// Prepare implements scenario.Scenario; the lab is Linux only.
func (s *Scenario) Prepare(context.Context, scenario.Env, scenario.Point) (scenario.Prepared, error) {
	return nil, lab.ErrNotSupportedOnOS
}

// Close implements scenario.Scenario.
func (s *Scenario) Close(context.Context) error { return nil }
