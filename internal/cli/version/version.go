// Package version implements `cnibench version`.
package versioncmd

import (
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/internal/buildinfo"
	"github.com/cnibench/cnibench/internal/cli/streams"
)

// NewCommand returns the version command.
func NewCommand(_ *slog.Logger, s streams.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the cnibench version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t := buildinfo.Tool()
			commit := t.Commit
			if commit == "" {
				commit = "unknown"
			}
			_, err := fmt.Fprintf(s.Out, "cnibench %s (commit %s, %s)\n", t.Version, commit, t.Go)
			return err
		},
	}
}
