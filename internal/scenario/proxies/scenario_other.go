//go:build !linux

package proxies

import (
	"context"
	"errors"

	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/scenario"
)

// ErrNotSupported is wrapped by the skip reason of a point this machine
// or datapath cannot run.
var ErrNotSupported = errors.New("not supported")

type state struct{}

// probe: the proxies run in lab namespaces, which are Linux only.
func probe(string) error { return lab.ErrNotSupportedOnOS }

// Prepare implements scenario.Scenario; the lab is Linux only.
func (s *Scenario) Prepare(context.Context, scenario.Env, scenario.Point) (scenario.Prepared, error) {
	return nil, lab.ErrNotSupportedOnOS
}

// Close implements scenario.Scenario.
func (s *Scenario) Close(context.Context) error { return nil }
