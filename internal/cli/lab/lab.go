// Package lab implements `cnibench lab`: build, inspect and remove the local
// namespace lab (see docs/lab.md).
package labcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/internal/cli/clierr"
	"github.com/cnibench/cnibench/internal/cli/streams"
	"github.com/cnibench/cnibench/internal/lab"
	_ "github.com/cnibench/cnibench/internal/lab/datapaths" // the standard datapaths register themselves
)

// NewCommand returns the lab command and its subcommands.
func NewCommand(logger *slog.Logger, s streams.IOStreams) *cobra.Command {
	return newCommand(logger, s, hostPrivileges())
}

func newCommand(logger *slog.Logger, s streams.IOStreams, p privileges) *cobra.Command {
	c := &cobra.Command{
		Use:   "lab",
		Short: "Build, inspect and remove the local namespace lab",
		Long: "The lab is a set of network namespaces on this machine: for each datapath two\n" +
			"\"nodes\" joined by a veth wire and \"pods\" on them, all named cnb-<runid>-*,\n" +
			"with no link to the host's network. See docs/lab.md.",
		Args: cobra.NoArgs,
	}
	c.AddCommand(newUp(logger, s, p), newDown(logger, s, p), newStatus(logger, s, p), newDatapaths(logger, s, p))
	return c
}

type upFlags struct {
	datapaths string
	mtu       int
	wire      string
	runID     string
	hold      bool
}

func newUp(logger *slog.Logger, s streams.IOStreams, p privileges) *cobra.Command {
	f := &upFlags{}
	c := &cobra.Command{
		Use:   "up",
		Short: "Build the lab and leave it up (remove it with 'cnibench lab down')",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runUp(cmd.Context(), logger, s, f, p)
		},
	}
	c.Flags().StringVar(&f.datapaths, "datapaths", "", "comma-separated datapaths to build (default: all; see 'cnibench lab datapaths')")
	c.Flags().IntVar(&f.mtu, "mtu", lab.DefaultMTU, fmt.Sprintf("MTU of the wire between the nodes (%d-%d)", lab.MinMTU, lab.MaxMTU))
	c.Flags().StringVar(&f.wire, "wire", lab.DefaultWire, "node-to-node wire: "+strings.Join(lab.Wires, " or ")+" (nic: segmented to the MTU by the sender, GRO at the receiver, like a NIC; veth: bare veth pair; see docs/lab.md)")
	c.Flags().StringVar(&f.runID, "run-id", "", "run id naming the namespaces (default: random)")
	c.Flags().BoolVar(&f.hold, "hold", false, "stay in the foreground and remove the lab on Ctrl-C (needed for datapaths whose BPF programs live in this process)")
	return c
}

// parseUpOptions turns flags into lab options; bad values are usage errors.
func parseUpOptions(f *upFlags) (lab.Options, error) {
	opts := lab.Options{MTU: f.mtu, Wire: f.wire, RunID: f.runID, Detached: !f.hold}
	if f.mtu < lab.MinMTU || f.mtu > lab.MaxMTU {
		return opts, clierr.Usagef("--mtu %d: must be between %d and %d", f.mtu, lab.MinMTU, lab.MaxMTU)
	}
	if f.wire != "" && !slices.Contains(lab.Wires, f.wire) {
		return opts, clierr.Usagef("--wire %s: must be one of %s", f.wire, strings.Join(lab.Wires, ", "))
	}
	if f.runID != "" {
		if err := lab.ValidateRunID(f.runID); err != nil {
			return opts, clierr.Usagef("--run-id: %v", err)
		}
	}
	if strings.TrimSpace(f.datapaths) != "" {
		known := lab.Names()
		for _, d := range strings.Split(f.datapaths, ",") {
			d = strings.TrimSpace(d)
			if !slices.Contains(known, d) {
				return opts, clierr.Usagef("--datapaths %s: unknown datapath %q (known: %s)", f.datapaths, d, strings.Join(known, ", "))
			}
			if slices.Contains(opts.Datapaths, d) {
				return opts, clierr.Usagef("--datapaths %s: %q listed twice", f.datapaths, d)
			}
			opts.Datapaths = append(opts.Datapaths, d)
		}
	}
	return opts, nil
}

func runUp(ctx context.Context, logger *slog.Logger, s streams.IOStreams, f *upFlags, p privileges) error {
	opts, err := parseUpOptions(f)
	if err != nil {
		return err
	}
	if err := p.check("up"); err != nil {
		return err
	}
	l := lab.New(logger)
	if err := l.Up(ctx, opts); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("lab up: %w", errors.Join(clierr.ErrInterrupted, err))
		}
		return fmt.Errorf("lab up: %w", err)
	}
	if err := printLab(s.Out, l); err != nil {
		return err
	}
	if !f.hold {
		fmt.Fprintf(s.ErrOut, "lab %s is up; remove it with 'cnibench lab down'\n", l.RunID())
		return nil
	}
	runID := l.RunID()
	fmt.Fprintf(s.ErrOut, "lab %s is up; press Ctrl-C to remove it\n", runID)
	<-ctx.Done()
	if err := l.Down(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("lab down: %w", err)
	}
	fmt.Fprintf(s.ErrOut, "lab %s removed\n", runID)
	return nil
}

// printLab writes what a lab offers: per datapath its MTUs and paths.
func printLab(w io.Writer, l *lab.Lab) error {
	st := l.State()
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "run id\t%s\n", st.RunID)
	fmt.Fprintf(tw, "wire MTU\t%d\n\n", st.WireMTU)
	fmt.Fprintln(tw, "DATAPATH\tPATH\tCLIENT NETNS\tSERVER NETNS\tSERVER IP\tPOD MTU\tPATH MTU")
	for _, d := range st.Datapaths {
		for _, p := range d.Paths {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\n", d.Name, p.Kind, p.Client, p.Server, p.ServerIP, d.PodMTU, d.PathMTU)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, d := range st.Datapaths {
		if d.Skipped != "" {
			if _, err := fmt.Fprintf(w, "skipped %s: %s\n", d.Name, d.Skipped); err != nil {
				return err
			}
		}
	}
	return nil
}

type downFlags struct {
	runID string
	force bool
}

func newDown(_ *slog.Logger, s streams.IOStreams, p privileges) *cobra.Command {
	f := &downFlags{}
	c := &cobra.Command{
		Use:   "down",
		Short: "Remove this machine's labs, including leftovers of crashed runs",
		Long: "Removes every namespace named cnb-* (and the processes still in them) and the\n" +
			"state files in /run/cnibench. A lab whose owning process still runs (a benchmark\n" +
			"in progress) is kept unless --force.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.runID != "" {
				if err := lab.ValidateRunID(f.runID); err != nil {
					return clierr.Usagef("--run-id: %v", err)
				}
			}
			if err := p.check("down"); err != nil {
				return err
			}
			res, err := lab.Cleanup(cmd.Context(), lab.CleanupOptions{RunID: f.runID, Force: f.force})
			for _, id := range res.Removed {
				fmt.Fprintf(s.Out, "removed lab %s\n", id)
			}
			for _, id := range res.Kept {
				fmt.Fprintf(s.Out, "kept lab %s: its owner process still runs (use --force to remove it)\n", id)
			}
			if len(res.Removed) == 0 && len(res.Kept) == 0 && err == nil {
				fmt.Fprintln(s.Out, "no lab to remove")
			}
			if err != nil {
				return fmt.Errorf("lab down: %w", err)
			}
			return nil
		},
	}
	c.Flags().StringVar(&f.runID, "run-id", "", "remove only this run")
	c.Flags().BoolVar(&f.force, "force", false, "also remove labs whose owning process still runs")
	return c
}

func newStatus(_ *slog.Logger, s streams.IOStreams, p privileges) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "List this machine's labs and whether they are leaked",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			// Without root, lab.Status cannot tell a lab in use from a
			// leaked one, nor see every lab: it must not say "no lab".
			if err := p.check("status"); err != nil {
				return err
			}
			runs, err := lab.Status()
			if err != nil && len(runs) == 0 {
				// Nothing seen and something unreadable: "no lab" would be a guess.
				return fmt.Errorf("lab status: %w", err)
			}
			if perr := printStatus(s.Out, runs); perr != nil {
				return perr
			}
			if err != nil {
				return fmt.Errorf("lab status: %w", err)
			}
			return nil
		},
	}
}

func printStatus(w io.Writer, runs []lab.RunStatus) error {
	if len(runs) == 0 {
		_, err := fmt.Fprintln(w, "no lab on this machine")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN ID\tSTATE\tOWNER PID\tCREATED\tNAMESPACES\tDATAPATHS")
	for _, r := range runs {
		state, pid, created, dps := runState(r), "-", "-", "-"
		if r.State != nil {
			pid = fmt.Sprint(r.State.PID)
			created = r.State.Created.Local().Format(time.DateTime)
			var names []string
			for _, d := range r.State.Datapaths {
				if d.Skipped == "" {
					names = append(names, d.Name)
				}
			}
			dps = strings.Join(names, ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", r.RunID, state, pid, created, len(r.Namespaces), dps)
	}
	return tw.Flush()
}

func runState(r lab.RunStatus) string {
	switch {
	case r.Leaked && r.State == nil:
		return "leaked (no state file)"
	case r.Leaked:
		return "leaked (owner gone)"
	case r.State == nil:
		return "in use (no state file)"
	case r.State.Detached:
		return "up (lab up)"
	default:
		return "in use"
	}
}
