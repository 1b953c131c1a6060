// Package suite implements `cnibench suite`: the local lab benchmark.
package suite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/internal/cli/clierr"
	"github.com/cnibench/cnibench/internal/cli/streams"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/internal/suite"
	"github.com/cnibench/cnibench/pkg/result"
)

type flagpole struct {
	Profile     string
	Datapaths   string
	Tests       string
	Flows       string
	HTTPClients int
	Repeat      int
	Duration    time.Duration
	Warmup      time.Duration
	MTU         string
	NoConntrack bool
	Out         string
}

// NewCommand returns the suite command.
func NewCommand(logger *slog.Logger, s streams.IOStreams) *cobra.Command {
	f := &flagpole{}
	cmd := &cobra.Command{
		Use:   "suite",
		Short: "Run the benchmark matrix on the local namespace lab (needs root)",
		Long: "Suite brings the local lab up (nodes and pods as network namespaces, one set per\n" +
			"datapath), runs tcp_stream, tcp_rr and tcp_crr at 1 and 32 flows, udp_stream and http\n" +
			"across every datapath, cross-node and same-node, with repeats interleaved across\n" +
			"datapaths, writes DIR/results.json, prints a table and tears the lab down.\n\n" +
			"Profiles: quick (3 repeats of 0.4 s, under 3 minutes on 2 cores) and standard\n" +
			"(5 repeats of 1.5 s, plus an MTU 9000 sweep; under 20 minutes).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runE(cmd, logger, s, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Profile, "profile", "quick", "quick or standard")
	fl.StringVar(&f.Datapaths, "datapaths", "", "comma-separated datapaths (default: all; see 'cnibench lab datapaths')")
	fl.StringVar(&f.Tests, "tests", "", "comma-separated tests (default: tcp_stream,tcp_rr,tcp_crr,udp_stream,http)")
	fl.StringVar(&f.Flows, "flows", "", "comma-separated flow counts for the tcp tests (default: 1,32)")
	fl.IntVar(&f.HTTPClients, "http-clients", 0, "concurrent clients of the http test (default 32)")
	fl.IntVar(&f.Repeat, "repeat", 0, "repeats per cell (default: the profile's)")
	fl.DurationVar(&f.Duration, "duration", 0, "measured window per repeat (default: the profile's)")
	fl.DurationVar(&f.Warmup, "warmup", 0, "warm-up before each window (default: the profile's)")
	fl.StringVar(&f.MTU, "mtu", "", "comma-separated wire MTUs; the first runs the whole matrix, others the MTU-sensitive tests (default: the profile's)")
	fl.BoolVar(&f.NoConntrack, "no-conntrack-scenario", false, "skip the NOTRACK comparison on tcp_crr")
	fl.StringVar(&f.Out, "out", "", "output directory (default: cnibench-results/<time>)")
	return cmd
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func ints(flag, s string) ([]int, error) {
	var out []int
	for _, p := range splitList(s) {
		v, err := strconv.Atoi(p)
		if err != nil {
			return nil, clierr.Usagef("--%s %s: %q is not a whole number", flag, s, p)
		}
		out = append(out, v)
	}
	return out, nil
}

func (f *flagpole) options(cmd *cobra.Command) (suite.Options, error) {
	o, err := suite.Profile(f.Profile)
	if err != nil {
		return o, clierr.Usagef("--profile %s: must be quick or standard", f.Profile)
	}
	if f.Datapaths != "" {
		o.Datapaths = splitList(f.Datapaths)
	}
	if f.Tests != "" {
		o.Tests = splitList(f.Tests)
	}
	if f.Flows != "" {
		if o.Flows, err = ints("flows", f.Flows); err != nil {
			return o, err
		}
	}
	if f.MTU != "" {
		if o.MTUs, err = ints("mtu", f.MTU); err != nil {
			return o, err
		}
	}
	if cmd.Flags().Changed("http-clients") {
		o.HTTPClients = f.HTTPClients
	}
	if cmd.Flags().Changed("repeat") {
		o.Repeat = f.Repeat
	}
	if cmd.Flags().Changed("duration") {
		o.Duration = f.Duration
	}
	if cmd.Flags().Changed("warmup") {
		o.Warmup = f.Warmup
	}
	o.Conntrack = !f.NoConntrack
	o.OutDir = f.Out
	if o.OutDir == "" {
		o.OutDir = filepath.Join("cnibench-results", time.Now().Format("20060102-150405"))
	}
	return o, nil
}

func runE(cmd *cobra.Command, logger *slog.Logger, s streams.IOStreams, f *flagpole) error {
	o, err := f.options(cmd)
	if err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return errors.New("the lab needs root (network namespaces, netfilter, BPF): run as root, e.g. sudo cnibench suite")
	}
	pw := newProgressWriter(s.ErrOut)
	r := &suite.Runner{Logger: logger, Progress: pw}
	out, err := r.Run(cmd.Context(), o)
	pw.Done()
	var ve *suite.ValidationError
	if errors.As(err, &ve) {
		return clierr.Usagef("%v", err)
	}
	if out == nil {
		return err
	}
	fmt.Fprintln(s.Out)
	if terr := Table(s.Out, out.Set); terr != nil && err == nil {
		err = terr
	}
	paths, rerr := writeReports(out)
	if rerr != nil {
		fmt.Fprintf(s.ErrOut, "cnibench: report: %v\n", rerr)
	}
	fmt.Fprintf(s.Out, "\nresults: %s\n", out.ResultsPath)
	for _, p := range paths {
		fmt.Fprintf(s.Out, "report:  %s\n", p)
	}
	if err != nil && errors.Is(err, context.Canceled) {
		return fmt.Errorf("%w: the lab was torn down; %d measured run(s) kept in %s", clierr.ErrInterrupted, len(out.Set.Runs), out.ResultsPath)
	}
	return err
}

// writeReports writes report.html and report.md next to results.json.
func writeReports(out *suite.Outcome) ([]string, error) {
	html, md, err := report.WriteFiles(out.Set, filepath.Dir(out.ResultsPath))
	if err != nil {
		return nil, err
	}
	return []string{html, md}, nil
}

// Table prints the primary metric of every run: one row per datapath and
// path, one column per test and flow count.
func Table(w io.Writer, set *result.Set) error {
	type col struct {
		test  string
		flows int
		mtu   string
	}
	rows := map[string]map[col]string{}
	var rowKeys []string
	cols := map[col]bool{}
	for _, r := range set.Runs {
		l := r.Labels
		rk := l["datapath"] + " " + l["path"]
		f, _ := strconv.Atoi(l["flows"])
		c := col{l["test"], f, l["mtu"]}
		if rows[rk] == nil {
			rows[rk] = map[col]string{}
			rowKeys = append(rowKeys, rk)
		}
		primary := result.TransPerSec
		if engine.IsStream(c.test) {
			primary = result.ThroughputBitsPerSec
		}
		sm, ok := r.Summary[primary]
		if !ok || sm.N == 0 {
			rows[rk][c] = "failed"
		} else {
			rows[rk][c] = result.Format(primary, sm.Median)
			if sm.CoV > 0.1 {
				rows[rk][c] += " ±" + strconv.Itoa(int(100*sm.CoV+0.5)) + "%"
			}
		}
		cols[c] = true
	}
	var cl []col
	for c := range cols {
		cl = append(cl, c)
	}
	testRank := map[string]int{}
	for i, t := range engine.Tests {
		testRank[t] = i
	}
	sort.Slice(cl, func(i, j int) bool {
		a, b := cl[i], cl[j]
		if a.mtu != b.mtu {
			return a.mtu < b.mtu
		}
		if a.test != b.test {
			return testRank[a.test] < testRank[b.test]
		}
		return a.flows < b.flows
	})
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "datapath path")
	multiMTU := false
	for _, c := range cl {
		if c.mtu != cl[0].mtu {
			multiMTU = true
		}
	}
	for _, c := range cl {
		h := fmt.Sprintf("\t%s ×%d", c.test, c.flows)
		if multiMTU {
			h += " mtu " + c.mtu
		}
		fmt.Fprint(tw, h)
	}
	fmt.Fprintln(tw)
	for _, rk := range rowKeys {
		fmt.Fprint(tw, rk)
		for _, c := range cl {
			v := rows[rk][c]
			if v == "" {
				v = "-"
			}
			fmt.Fprint(tw, "\t"+v)
		}
		fmt.Fprintln(tw)
	}
	for _, sk := range set.Skipped {
		fmt.Fprintf(tw, "%s\t%s\n", sk.Labels["datapath"], sk.Reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "(median of the repeats; ±N% = coefficient of variation above 10%; throughput for stream tests, trans/s otherwise)")
	if set.Interrupted {
		fmt.Fprintln(w, "interrupted: the table covers what was measured before the interruption")
	}
	return nil
}
