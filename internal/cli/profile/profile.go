// Package profile implements `cnibench profile`: a system-wide CPU profile
// of this machine for a while, or for as long as a command runs (a peer
// tool, e.g. netperf, so that its flamegraph sits next to the engine's).
package profilecmd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/internal/cli/clierr"
	"github.com/cnibench/cnibench/internal/cli/streams"
	"github.com/cnibench/cnibench/internal/profile"
	"github.com/cnibench/cnibench/internal/report/flame"
)

type flagpole struct {
	Out      string
	Duration time.Duration
	Hz       int
	Engine   []string
	SVG      string
}

// NewCommand returns the profile command.
func NewCommand(logger *slog.Logger, s streams.IOStreams) *cobra.Command {
	f := &flagpole{}
	cmd := &cobra.Command{
		Use:   "profile -o FILE [--duration D | -- COMMAND [ARGS…]]",
		Short: "Sample every CPU of this machine (kernel and user stacks) into a pprof file",
		Long: "Profile samples every CPU of this machine with perf_event_open (needs root or\n" +
			"perf_event_paranoid ≤ -1) for --duration, or for as long as COMMAND runs, and writes a\n" +
			"gzipped pprof file (go tool pprof opens it), optionally an interactive flamegraph (--svg),\n" +
			"and prints the CPU breakdown by symbol family (docs/profiles.md). --engine names the\n" +
			"processes whose user space counts as the engine family (default cnibench): e.g.\n" +
			"--engine netperf,netserver to profile a peer the same way.",
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runE(cmd.Context(), logger, s, f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.Out, "output", "o", "", "gzipped pprof file to write (required)")
	fl.DurationVar(&f.Duration, "duration", 0, "how long to sample (without COMMAND; with it, a bound on the command)")
	fl.IntVar(&f.Hz, "hz", profile.DefaultHz, "samples per second per CPU")
	fl.StringSliceVar(&f.Engine, "engine", []string{profile.EngineComm}, "process names (comm) whose user space is the engine family")
	fl.StringVar(&f.SVG, "svg", "", "also write an interactive flamegraph to this SVG file")
	return cmd
}

func runE(ctx context.Context, logger *slog.Logger, s streams.IOStreams, f *flagpole, args []string) error {
	switch {
	case f.Out == "":
		return clierr.Usagef("--output: give the pprof file to write, e.g. -o cpu.pb.gz")
	case f.Hz < 1 || f.Hz > 10000:
		return clierr.Usagef("--hz %d: give 1..10000 samples per second per CPU", f.Hz)
	case len(args) == 0 && f.Duration <= 0:
		return clierr.Usagef("give --duration, or a command to profile after --")
	case f.Duration < 0:
		return clierr.Usagef("--duration %v: must be positive", f.Duration)
	}
	if err := profile.Probe(); err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	sess, err := profile.Start(profile.Options{Frequency: f.Hz})
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	runErr := wait(ctx, s, f.Duration, args)
	p, err := sess.Stop()
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	if err := p.WriteFile(f.Out); err != nil {
		return fmt.Errorf("write --output %s: %w", f.Out, err)
	}
	if f.SVG != "" {
		title := "CPU profile"
		if len(args) > 0 {
			title += ": " + strings.Join(args, " ")
		}
		if err := writeSVG(f.SVG, p, title); err != nil {
			return fmt.Errorf("write --svg %s: %w", f.SVG, err)
		}
	}
	printBreakdown(s.Out, p, f.Engine)
	if logger != nil {
		logger.Debug("profile written", "file", f.Out, "samples", p.Samples, "lost", p.Lost)
	}
	return runErr
}

// wait returns after d, or once the command exits (bounded by d when
// given), or when ctx ends.
func wait(ctx context.Context, s streams.IOStreams, d time.Duration, args []string) error {
	if len(args) == 0 {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: kept the profile so far", clierr.ErrInterrupted)
		case <-time.After(d):
			return nil
		}
	}
	if d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s.In, s.Out, s.ErrOut
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("profiled command %s: %w", args[0], err)
	}
	return nil
}

func writeSVG(path string, p *profile.Profile, title string) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := flame.SVG(fh, p.P, flame.Options{Title: title, MinFraction: 0.001}); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}

// printBreakdown prints the samples and each family's exclusive share.
func printBreakdown(w io.Writer, p *profile.Profile, engine []string) {
	sh := profile.BreakdownFor(p.P, engine...)
	fmt.Fprintf(w, "%d samples over %s on %d CPUs at %d Hz (%d lost); CPU by family (exclusive %%, inclusive %%):\n",
		p.Samples, p.Window.Round(time.Millisecond), p.CPUs, p.Frequency, p.Lost)
	for _, fam := range profile.Families {
		ex, in := 100*sh.Exclusive[fam.Name], 100*sh.Inclusive[fam.Name]
		if ex < 0.05 && in < 0.05 {
			continue
		}
		fmt.Fprintf(w, "  %-13s %6.1f %6.1f\n", fam.Name, ex, in)
	}
	names := make([]string, 0, len(sh.BPF))
	for n := range sh.BPF {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(w, "  bpf_prog:%-22s %6.1f (inclusive)\n", n, 100*sh.BPF[n])
	}
}
