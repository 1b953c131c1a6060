package k8sagentcmd

import (
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/internal/cli/clierr"
	"github.com/cnibench/cnibench/internal/cli/streams"
	"github.com/cnibench/cnibench/internal/kube/agent"
)

// Bounds of watch's durations.
const maxWatchWait = 30 * time.Minute

type watchFlags struct {
	connectFlags
	Allowed  string
	Want     string
	Interval time.Duration
	Wait     time.Duration
	Confirm  time.Duration
}

func newWatch(_ *slog.Logger, s streams.IOStreams) *cobra.Command {
	f := &watchFlags{}
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Time how long after a signal a target stops (or starts) answering",
		Long: "watch probes --target (TCP connections, closed with a reset) until it is in the\n" +
			"state opposite to --want, writes \"ready\" on stderr, waits for a line on stdin\n" +
			"(the caller's signal that it changes the cluster now: creates a policy, a\n" +
			"service), then starts a probe every --interval and prints the time from the\n" +
			"signal to the first probe of the state --want that held for --confirm, while\n" +
			"--allowed (if given) must keep answering. The outcome is the answer: the exit\n" +
			"status is 0 whatever it is. Schema " + agent.SchemaWatch + ".",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(); err != nil {
				return err
			}
			ctx, stop := signalContext(cmd)
			defer stop()
			w := agent.RunWatch(ctx, agent.WatchOptions{Target: f.Target, Allowed: f.Allowed, Want: f.Want,
				Interval: f.Interval, ProbeTimeout: f.Timeout, Wait: f.Wait, Confirm: f.Confirm}, s.In, s.ErrOut)
			return writeJSON(s, w)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Target, "target", "", "HOST:PORT watched")
	fl.StringVar(&f.Allowed, "allowed", "", "HOST:PORT that must keep answering meanwhile (optional)")
	fl.StringVar(&f.Want, "want", agent.WantRefused, "the state awaited: refused (stops answering) or answers")
	fl.DurationVar(&f.Interval, "interval", 2*time.Millisecond, "time between probe starts (the resolution)")
	fl.DurationVar(&f.Timeout, "timeout", 300*time.Millisecond, "time each probe has to connect")
	fl.DurationVar(&f.Wait, "wait", time.Minute, "bound on the wait for the state, and for the signal")
	fl.DurationVar(&f.Confirm, "confirm", time.Second, "how long the new state must hold")
	return cmd
}

func (f *watchFlags) check() error {
	f.Count = 1
	if err := f.connectFlags.check(); err != nil {
		return err
	}
	if f.Allowed != "" {
		a := connectFlags{Target: f.Allowed, Timeout: f.Timeout, Count: 1}
		if err := a.check(); err != nil {
			return clierr.Usagef("--allowed %q: must be HOST:PORT", f.Allowed)
		}
	}
	switch {
	case f.Want != agent.WantRefused && f.Want != agent.WantAnswers:
		return clierr.Usagef("--want %q: must be %s or %s", f.Want, agent.WantRefused, agent.WantAnswers)
	case f.Interval < 100*time.Microsecond || f.Interval > time.Second:
		return clierr.Usagef("--interval %s: must be between 100µs and 1s", f.Interval)
	case f.Wait <= 0 || f.Wait > maxWatchWait:
		return clierr.Usagef("--wait %s: must be above 0 and at most %s", f.Wait, maxWatchWait)
	case f.Confirm < 0 || f.Confirm > f.Wait:
		return clierr.Usagef("--confirm %s: must be between 0 and --wait", f.Confirm)
	}
	return nil
}
