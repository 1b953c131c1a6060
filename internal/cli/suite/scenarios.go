package suitecmd

// The scenarios linked into cnibench: each registers its name, flags,
// config and report shape from its own package (scenario.Register in its
// register.go). This is the only place that names them; a new scenario
// adds its import here.
import (
	_ "github.com/cnibench/cnibench/internal/scenario/apps"
	_ "github.com/cnibench/cnibench/internal/scenario/egress"
	_ "github.com/cnibench/cnibench/internal/scenario/encrypt"
	_ "github.com/cnibench/cnibench/internal/scenario/l4lb"
	_ "github.com/cnibench/cnibench/internal/scenario/mtu"
	_ "github.com/cnibench/cnibench/internal/scenario/proxies"
	_ "github.com/cnibench/cnibench/internal/scenario/services"
)
