// Package k8sagent implements the hidden `cnibench k8s agent`: the probes
// the Kubernetes backend execs into its pods, whose image holds nothing
// but /cnibench. Each probe but idle prints one JSON document on stdout
// (internal/kube/agent's types, with a "schema" field). Exit status: 2 for
// bad flags (a one-line message on stderr), 0 when the JSON is the answer,
// including the answers "not found" and "refused"; 1 when the probe could
// not run at all (inspect, capture, profile), with the JSON's "error" saying why.
package k8sagentcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	neturl "net/url"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/internal/cli/clierr"
	"github.com/cnibench/cnibench/internal/cli/streams"
	"github.com/cnibench/cnibench/internal/kube/agent"
)

// NewCommand returns the agent command and its probes.
func NewCommand(logger *slog.Logger, s streams.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:    "agent",
		Short:  "Probes the Kubernetes backend runs inside its pods",
		Hidden: true,
		Long: "agent holds the probes the Kubernetes backend execs into its pods (their image has\n" +
			"only /cnibench). Each prints one JSON document on stdout with a \"schema\" field\n" +
			"(cnibench/agent/<kind>/v1); idle is the pods' main process.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(
		newIdle(logger, s),
		newInspect(logger, s),
		newCNIConf(logger, s),
		newCgroup(logger, s),
		newConnect(logger, s),
		newWatch(logger, s),
		newEgressFilter(logger, s),
		newCapture(logger, s),
		newNetstat(logger, s),
		newProxyMode(logger, s),
		newProfile(logger, s),
	)
	return cmd
}

func newIdle(_ *slog.Logger, s streams.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "idle",
		Short: "Print \"ready\" on stderr and wait for SIGTERM or SIGINT",
		Long: "idle is the main process of the backend's pods: it prints \"ready\" as its first\n" +
			"stderr line, then waits until SIGTERM or SIGINT and exits 0.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signalContext(cmd)
			defer stop()
			if _, err := fmt.Fprintln(s.ErrOut, "ready"); err != nil {
				return fmt.Errorf("agent idle: %w", err)
			}
			<-ctx.Done()
			return nil
		},
	}
}

// signalContext is the command's context, also ended by SIGTERM and
// SIGINT (the top level's does that too; a command mounted elsewhere
// keeps the behaviour).
func signalContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	return signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
}

// writeJSON prints v as one indented JSON document.
func writeJSON(s streams.IOStreams, v any) error {
	enc := json.NewEncoder(s.Out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write the result: %w", err)
	}
	return nil
}

func newNetstat(_ *slog.Logger, s streams.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "netstat",
		Short: "Print this network namespace's TCP/IP counters (/proc/net/netstat and snmp)",
		Long: "netstat prints the unsigned counters of /proc/net/netstat and /proc/net/snmp of the\n" +
			"network namespace it runs in (a pod's; a node's in a host-network pod), e.g.\n" +
			"TcpExt:PAWSTimewait and TcpExt:TCPSynRetrans. Schema " + agent.SchemaNetstat + ".",
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			n := agent.ReadNetstat("/proc")
			if err := writeJSON(s, n); err != nil {
				return err
			}
			if n.Error != "" {
				return fmt.Errorf("agent netstat: %s", n.Error)
			}
			return nil
		},
	}
}

func newProxyMode(_ *slog.Logger, s streams.IOStreams) *cobra.Command {
	var url string
	cmd := &cobra.Command{
		Use:   "proxy-mode",
		Short: "Print kube-proxy's mode as the node's kube-proxy answers it (run in a host-network pod)",
		Long: "proxy-mode asks kube-proxy's metrics endpoint (" + agent.KubeProxyMetricsURL + ")\n" +
			"for its mode, within 3 s: it answers whatever runs kube-proxy (a DaemonSet, a\n" +
			"systemd unit). Nothing answering is not an error: the JSON says why. Schema " + agent.SchemaProxyMode + ".",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkURL("url", url, agent.KubeProxyMetricsURL); err != nil {
				return err
			}
			return writeJSON(s, agent.ReadProxyMode(cmd.Context(), url, 3*time.Second))
		},
	}
	cmd.Flags().StringVar(&url, "url", agent.KubeProxyMetricsURL, "kube-proxy's proxyMode URL")
	return cmd
}

// checkURL refuses a --flag that is not an absolute http(s) URL with a
// host.
func checkURL(flag, v, example string) error {
	u, err := neturl.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return clierr.Usagef("--%s %q: want an http:// or https:// URL with a host, e.g. %s", flag, v, example)
	}
	return nil
}

// checkDir refuses a --flag that cannot name a directory (empty, or with
// a NUL or a line break in it); a directory that is missing is the
// probe's answer, not a usage error.
func checkDir(flag, v, example string) error {
	if v == "" || strings.ContainsAny(v, "\x00\n") || strings.TrimSpace(v) != v {
		return clierr.Usagef("--%s %q: must name a directory, e.g. %s", flag, v, example)
	}
	return nil
}
