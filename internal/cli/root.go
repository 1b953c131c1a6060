// Package cli builds cnibench's command tree. Each subcommand lives in its
// own package with a local flags struct and a thin RunE: internal/cli/NAME,
// package NAMEcmd (as kind names its command packages), so that no command
// package shares its name with the package it drives (report, compare, …).
package cli

import (
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/internal/cli/clierr"
	comparecmd "github.com/cnibench/cnibench/internal/cli/compare"
	exportcmd "github.com/cnibench/cnibench/internal/cli/export"
	imagecmd "github.com/cnibench/cnibench/internal/cli/image"
	k8scmd "github.com/cnibench/cnibench/internal/cli/k8s"
	labcmd "github.com/cnibench/cnibench/internal/cli/lab"
	profilecmd "github.com/cnibench/cnibench/internal/cli/profile"
	reportcmd "github.com/cnibench/cnibench/internal/cli/report"
	runcmd "github.com/cnibench/cnibench/internal/cli/run"
	servecmd "github.com/cnibench/cnibench/internal/cli/serve"
	"github.com/cnibench/cnibench/internal/cli/streams"
	suitecmd "github.com/cnibench/cnibench/internal/cli/suite"
	versioncmd "github.com/cnibench/cnibench/internal/cli/version"
	wgnodecmd "github.com/cnibench/cnibench/internal/cli/wgnode"
)

// IOStreams are the standard streams a command writes to.
type IOStreams = streams.IOStreams

// NewCommand returns the root command.
func NewCommand(logger *slog.Logger, s IOStreams) *cobra.Command {
	root := &cobra.Command{
		Use:   "cnibench",
		Short: "Benchmark container network datapaths",
		Long: "cnibench measures how a container network datapath performs (throughput, latency,\n" +
			"connection rate, CPU cost), explains why, and shows it.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(s.Out)
	root.SetErr(s.ErrOut)
	root.SetIn(s.In)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return clierr.Usagef("%s (see '%s --help')", strings.TrimSpace(err.Error()), c.CommandPath())
	})
	root.CompletionOptions.DisableDefaultCmd = true
	for _, add := range subcommands {
		c := add(logger, s)
		c.SetFlagErrorFunc(root.FlagErrorFunc())
		root.AddCommand(c)
	}
	return root
}

// subcommands lists the constructors of the top-level subcommands.
var subcommands = []func(*slog.Logger, IOStreams) *cobra.Command{
	versioncmd.NewCommand,
	labcmd.NewCommand,
	servecmd.NewCommand,
	runcmd.NewCommand,
	suitecmd.NewCommand,
	reportcmd.NewCommand,
	profilecmd.NewCommand,
	comparecmd.NewCommand,
	exportcmd.NewCommand,
	imagecmd.NewCommand,
	k8scmd.NewCommand,
	wgnodecmd.NewCommand, // hidden: the suite's userspace WireGuard node
}
