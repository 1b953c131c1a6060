package k8sagentcmd

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/internal/cli/clierr"
	"github.com/cnibench/cnibench/internal/cli/streams"
	"github.com/cnibench/cnibench/internal/kube/agent"
	"github.com/cnibench/cnibench/internal/profile"
)

// Bounds of profile's flags.
const (
	maxProfileHz   = 10000
	maxProfileTime = time.Hour
)

type profileFlags struct {
	Hz             int
	Duration       time.Duration
	StopOnStdinEOF bool
	Probe          bool
}

func newProfile(_ *slog.Logger, s streams.IOStreams) *cobra.Command {
	flags := &profileFlags{}
	cmd := &cobra.Command{
		Use:   "profile",
		Short: "Sample every CPU of the node (run in a privileged host pod) and print the pprof profile",
		Long: "profile samples every CPU of the node (perf_event_open, kernel and user stacks; needs\n" +
			"a privileged pod) at --hz per CPU for --duration, or until its standard input ends\n" +
			"with --stop-on-stdin-eof, or SIGTERM. Its first stderr line is \"ready\" once sampling\n" +
			"runs. The JSON carries the gzipped pprof profile (base64) whose samples keep their\n" +
			"wall-clock time, for the caller to crop to its measured windows. --probe only tries\n" +
			"perf_event_open and says why it fails (exit 0). A profile that cannot be taken\n" +
			"exits 1 with the JSON's \"error\". Schema " + agent.SchemaProfile + ".",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := flags.check(); err != nil {
				return err
			}
			if flags.Probe {
				return writeJSON(s, agent.ProbeProfile())
			}
			ctx, stop := signalContext(cmd)
			defer stop()
			var werr error
			o := agent.ProfileOptions{Hz: flags.Hz, Duration: flags.Duration,
				Ready: func() { _, werr = fmt.Fprintln(s.ErrOut, "ready") }}
			if flags.StopOnStdinEOF && s.In != nil {
				eof := make(chan struct{})
				go func() {
					_, _ = io.Copy(io.Discard, s.In)
					close(eof)
				}()
				o.Stop = eof
			}
			rep, err := agent.RunProfile(ctx, o)
			if jerr := writeJSON(s, rep); jerr != nil {
				return jerr
			}
			if err != nil {
				return fmt.Errorf("agent profile: %w", err)
			}
			if werr != nil {
				return fmt.Errorf("agent profile: %w", werr)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&flags.Hz, "hz", profile.DefaultHz, "samples per second per CPU")
	fl.DurationVar(&flags.Duration, "duration", 10*time.Second, "how long to sample at most (stdin's end or SIGTERM ends it early)")
	fl.BoolVar(&flags.StopOnStdinEOF, "stop-on-stdin-eof", false, "stop sampling and print the profile when standard input ends")
	fl.BoolVar(&flags.Probe, "probe", false, "only say whether this pod can sample the node's CPUs")
	return cmd
}

func (f *profileFlags) check() error {
	if f.Hz < 1 || f.Hz > maxProfileHz {
		return clierr.Usagef("--hz %d: must be between 1 and %d samples per second per CPU, e.g. %d", f.Hz, maxProfileHz, profile.DefaultHz)
	}
	if f.Duration <= 0 || f.Duration > maxProfileTime {
		return clierr.Usagef("--duration %s: must be above 0 and at most %s, e.g. 30s", f.Duration, maxProfileTime)
	}
	return nil
}
