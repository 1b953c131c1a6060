//go:build !linux

package encrypt

import (
	"context"

	"github.com/cnibench/cnibench/internal"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/scenario"
)

// ErrNotSupported is wrapped by the skip reason of an implementation this
// machine cannot run.
var ErrNotSupported = internal.ErrNotSupported

type state struct{}

func probe(point) error { return lab.ErrNotSupportedOnOS }

// Prepare implements scenario.Scenario; the lab is Linux only.
func (s *Scenario) Prepare(context.Context, scenario.Env, scenario.Point) (scenario.Prepared, error) {
	return nil, lab.ErrNotSupportedOnOS
}

// Close implements scenario.Scenario.
func (s *Scenario) Close(context.Context) error { return nil }
