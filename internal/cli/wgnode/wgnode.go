// Package wgnode implements the hidden `cnibench wg-node`: a userspace
// WireGuard (wireguard-go) device for one lab node, run by the suite inside
// the node's network namespace for as long as the node is encrypted.
package wgnodecmd

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/internal/cli/clierr"
	"github.com/cnibench/cnibench/internal/cli/streams"
	"github.com/cnibench/cnibench/internal/wireguard"
)

// NewCommand returns the wg-node command.
func NewCommand(logger *slog.Logger, s streams.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:    "wg-node",
		Short:  "Run a userspace WireGuard device in this network namespace (used by the suite)",
		Hidden: true,
		Long: "wg-node reads a tunnel configuration as one JSON object on stdin (keys in base64,\n" +
			"as wg prints them; never on the command line), creates a wireguard-go device on a\n" +
			"TUN device in the current network namespace, and runs it until SIGTERM or SIGINT.\n" +
			"Its first stderr line is \"ready: ...\" once the device is configured and up, or\n" +
			"the error. Fields: iface, private_key, peer_public_key, allowed_ips (required);\n" +
			"listen_port, peer_endpoint, address, mtu, persistent_keepalive (optional).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runE(cmd.Context(), logger, s)
		},
	}
}

func runE(ctx context.Context, logger *slog.Logger, s streams.IOStreams) error {
	cfg, err := wireguard.DecodeConfig(s.In)
	if err != nil {
		return clierr.Usagef("wg-node: config on stdin: %v", err)
	}
	// wireguard-go's own lines wait for the ready line: the first stderr
	// line is "ready" or the error.
	gate := &gate{next: logger.Handler(), open: new(atomic.Bool)}
	u, err := wireguard.StartUserspace(cfg, slog.New(gate))
	if err != nil {
		return fmt.Errorf("wg-node: %w", err)
	}
	defer u.Close()
	if _, err := fmt.Fprintf(s.ErrOut, "ready: %s (wireguard-go %s, userspace) listening on :%d\n",
		u.Name(), wireguard.UserspaceVersion(), u.Port()); err != nil {
		return fmt.Errorf("wg-node: %w", err)
	}
	gate.open.Store(true)
	select {
	case <-ctx.Done():
		return u.Close()
	case <-u.Done():
		return fmt.Errorf("wg-node: device %s closed unexpectedly", u.Name())
	}
}

// gate drops log records until it is opened.
type gate struct {
	next slog.Handler
	open *atomic.Bool
}

func (g *gate) Enabled(ctx context.Context, l slog.Level) bool {
	return g.open.Load() && g.next.Enabled(ctx, l)
}

func (g *gate) Handle(ctx context.Context, r slog.Record) error { return g.next.Handle(ctx, r) }

func (g *gate) WithAttrs(a []slog.Attr) slog.Handler {
	return &gate{next: g.next.WithAttrs(a), open: g.open}
}

func (g *gate) WithGroup(name string) slog.Handler {
	return &gate{next: g.next.WithGroup(name), open: g.open}
}
