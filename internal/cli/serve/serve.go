// Package serve implements `cnibench serve`.
package serve

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/internal/cli/clierr"
	"github.com/cnibench/cnibench/internal/cli/streams"
	"github.com/cnibench/cnibench/internal/engine"
)

type flagpole struct {
	Listen string
}

// NewCommand returns the serve command.
func NewCommand(logger *slog.Logger, s streams.IOStreams) *cobra.Command {
	flags := &flagpole{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve cnibench clients (the server side of every test)",
		Long: "Serve listens for cnibench clients and runs the server side of their tests.\n" +
			"It serves any number of clients and tests at once, until interrupted.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runE(cmd, logger, s, flags)
		},
	}
	cmd.Flags().StringVar(&flags.Listen, "listen", ":"+strconv.Itoa(engine.DefaultPort), "control address ADDR:PORT to listen on")
	return cmd
}

func runE(cmd *cobra.Command, logger *slog.Logger, s streams.IOStreams, flags *flagpole) error {
	addr := flags.Listen
	if _, _, err := net.SplitHostPort(addr); err != nil {
		// A bare address or port.
		if _, perr := strconv.Atoi(addr); perr == nil {
			addr = ":" + addr
		} else {
			addr = net.JoinHostPort(addr, strconv.Itoa(engine.DefaultPort))
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return clierr.Usagef("--listen %s: %v", flags.Listen, err)
	}
	fmt.Fprintf(s.ErrOut, "cnibench serve: listening on %s (protocol v%d)\n", ln.Addr(), engine.ProtoVersion)
	return engine.NewServer(logger).Serve(cmd.Context(), ln)
}
