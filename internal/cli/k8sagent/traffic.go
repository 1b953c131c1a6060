package k8sagentcmd

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/internal/capture"
	"github.com/cnibench/cnibench/internal/cli/clierr"
	"github.com/cnibench/cnibench/internal/cli/streams"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/kube/agent"
)

// Bounds of the flags.
const (
	maxConnectCount   = 1000
	maxConnectTimeout = time.Minute
	maxCaptureTime    = time.Hour
)

type connectFlags struct {
	Target  string
	Timeout time.Duration
	Count   int
}

func newConnect(_ *slog.Logger, s streams.IOStreams) *cobra.Command {
	flags := &connectFlags{}
	cmd := &cobra.Command{
		Use:   "connect",
		Short: "Try TCP connections to a target: does a NetworkPolicy let them through?",
		Long: "connect makes --count TCP connections to --target one after the other, each\n" +
			"bounded by --timeout, and prints how many connected, were refused or timed out,\n" +
			"the first distinct errors and the connect times. The outcome is the answer: the\n" +
			"exit status is 0 whatever it is. Schema " + agent.SchemaConnect + ".",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := flags.check(); err != nil {
				return err
			}
			ctx, stop := signalContext(cmd)
			defer stop()
			return writeJSON(s, agent.RunConnect(ctx, flags.Target, flags.Timeout, flags.Count))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&flags.Target, "target", "", "HOST:PORT to connect to (an IP address or a name, resolved once)")
	fl.DurationVar(&flags.Timeout, "timeout", 2*time.Second, "time each connection has to be established")
	fl.IntVar(&flags.Count, "count", 3, "connections to try, one after the other")
	return cmd
}

func (f *connectFlags) check() error {
	host, port, err := net.SplitHostPort(f.Target)
	if f.Target == "" || err != nil || host == "" {
		return clierr.Usagef("--target %q: must be HOST:PORT, e.g. 10.96.0.10:8080 or [fd00::1]:80", f.Target)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return clierr.Usagef("--target %q: the port must be a number between 1 and 65535", f.Target)
	}
	if f.Timeout <= 0 || f.Timeout > maxConnectTimeout {
		return clierr.Usagef("--timeout %s: must be above 0 and at most %s, e.g. 2s", f.Timeout, maxConnectTimeout)
	}
	if f.Count < 1 || f.Count > maxConnectCount {
		return clierr.Usagef("--count %d: must be between 1 and %d", f.Count, maxConnectCount)
	}
	return nil
}

type captureFlags struct {
	Iface    string
	Duration time.Duration
	RingSize string
	Between  []string
}

func newCapture(_ *slog.Logger, s streams.IOStreams) *cobra.Command {
	flags := &captureFlags{}
	cmd := &cobra.Command{
		Use:   "capture",
		Short: "Count the frames crossing an interface that carry cnibench's payload in clear",
		Long: "capture captures every frame --iface sends or receives (AF_PACKET; needs\n" +
			"CAP_NET_RAW) for --duration or until SIGTERM, and counts them by protocol and\n" +
			"those carrying cnibench's payload marker in clear. Its first stderr line is\n" +
			"\"ready\" once the capture runs: start the traffic after it. A capture that\n" +
			"cannot start exits 1 with the JSON's \"error\". Schema " + agent.SchemaCapture + ".",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := flags.options()
			if err != nil {
				return err
			}
			ctx, stop := signalContext(cmd)
			defer stop()
			var werr error
			ready := func() { _, werr = fmt.Fprintln(s.ErrOut, "ready") }
			rep, err := agent.RunCapture(ctx, flags.Iface, flags.Duration, o, ready)
			if jerr := writeJSON(s, rep); jerr != nil {
				return jerr
			}
			if err != nil {
				return fmt.Errorf("agent capture: %w", err)
			}
			if werr != nil {
				return fmt.Errorf("agent capture: %w", werr)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&flags.Iface, "iface", "", "the interface to capture on (an Ethernet or loopback device)")
	fl.DurationVar(&flags.Duration, "duration", 5*time.Second, "how long to capture (SIGTERM ends it early)")
	fl.StringVar(&flags.RingSize, "ring-size", strconv.Itoa(capture.DefaultRingSize>>20)+"M",
		"the capture's receive ring, a whole number of megabytes of at least 2M, e.g. 16M")
	fl.StringArrayVar(&flags.Between, "between", nil, "count apart the frames between two addresses A,B (repeatable): the run's pods and nodes, so that other workloads' frames do not decide the verdict")
	return cmd
}

func (f *captureFlags) options() (agent.CaptureOptions, error) {
	var o agent.CaptureOptions
	if f.Iface == "" {
		return o, clierr.Usagef("--iface: must name the interface to capture on, e.g. eth0")
	}
	if f.Duration <= 0 || f.Duration > maxCaptureTime {
		return o, clierr.Usagef("--duration %s: must be above 0 and at most %s, e.g. 5s", f.Duration, maxCaptureTime)
	}
	ring, err := engine.ParseSize(f.RingSize)
	if err != nil || ring < 2*capture.DefaultBlockSize || ring%capture.DefaultBlockSize != 0 {
		return o, clierr.Usagef("--ring-size %q: must be a whole number of megabytes of at least 2M, e.g. 16M", f.RingSize)
	}
	o.Capture.RingSize = ring
	filter, err := agent.ParseCaptureFilter(f.Between)
	if err != nil {
		return o, clierr.Usagef("%v", err)
	}
	o.Capture.Filter = filter
	return o, nil
}
