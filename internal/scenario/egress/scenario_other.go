//go:build !linux

package egress

import (
	"context"

	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/scenario"
)

// Prepare implements scenario.Scenario; the lab's filters are Linux only.
func (s *Scenario) Prepare(context.Context, scenario.Env, scenario.Point) (scenario.Prepared, error) {
	return nil, lab.ErrNotSupportedOnOS
}

// Close implements scenario.Scenario.
func (s *Scenario) Close(context.Context) error { return nil }
