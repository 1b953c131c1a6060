// Package compare implements `cnibench compare`.
package comparecmd

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/internal/cli/clierr"
	"github.com/cnibench/cnibench/internal/cli/streams"
	"github.com/cnibench/cnibench/internal/report"
	cmp "github.com/cnibench/cnibench/internal/report/compare"
	"github.com/cnibench/cnibench/pkg/result"
)

type flags struct {
	by       string
	baseline string
	metrics  []string
	match    []string
	format   string
	flame    string
	failOn   []string
	alpha    float64
	junit    string
	markdown string
	where    []string
}

// NewCommand returns the compare command.
func NewCommand(_ *slog.Logger, s streams.IOStreams) *cobra.Command {
	f := &flags{}
	c := &cobra.Command{
		Annotations: map[string]string{clierr.StopAnnotation: clierr.StopAtOnce},
		Use:         "compare OLD.json NEW.json [MORE.json...] | compare --by LABEL [--baseline VALUE] RESULTS.json [MORE.json...]",
		Short:       "Compare results like benchstat: medians, confidence intervals, deltas, significance",
		Long: `Compare cnibench results in the manner of benchstat.

With two or more files, every run of OLD.json is matched with the run of each
NEW.json that has exactly the same labels (datapath, path, test, flows, mtu,
scenario, ...). Two single-run results of 'cnibench run' are compared whatever
their labels.

With --by LABEL and one results file, every value of that label is compared
with the --baseline value: --by datapath (baseline "baseline" by default)
compares datapaths, --by mechanism --baseline none the egress-filter scenario's
mechanisms against no filter. A run is matched with the baseline run whose
labels are equal except LABEL; when there is none, --by datapath also ignores
path (the node-to-node baseline has no cross-node or same-node runs),
--by mechanism ignores traversal (none has no new-connection runs) and --by
path ignores the node and zone labels (a path's placement is part of it:
same-node's server, external-to-loadbalancer's client).

--by LABEL with several files pools their runs when each value of the label
comes from one file (refused otherwise): --by cni --baseline flannel
k8s-flannel/results.json k8s-cilium/results.json compares two clusters' CNIs,
matching runs on their labels except the other cni_* labels, the CNI's
datapath (cni-<name>), kube_proxy_mode where the files differ in it (a CNI
that replaces kube-proxy), the cluster and, where each file's cells stay
distinct without them, the nodes; the output names the labels ignored.
--by service_proxy (what serves a cluster's ClusterIP services) matches
across files alike, and ignores cni too where the files differ in it.

For each matched run and metric the output shows both medians with their 95 %
confidence interval, the change in percent, the p-value of a two-sided
Mann-Whitney U test and its q-value; "~" marks differences that are not
significant on their own (p > 0.05). The q-value is the p-value adjusted by
Benjamini-Hochberg over every row the output prints a p-value for (all cells x
metrics; rows with too few repeats for a verdict are left out; one row: q = p):
among the rows with q <= 0.05 at most 5 % are expected to be false discoveries.
Read a difference among many compared cells only where q <= 0.05.
Warnings (too few repeats, noisy samples, outliers) are footnotes.

Runs of a sweep scenario (egress-filter against rules, services against the
number of services) are compared as curves, in tables of their own: rows per
curve, ordered by N numerically, each point with the ratio of the two sides and
its 95 % interval, and a summary per curve judged by the q-values ("worse at 3
of 4 points (q <= 0.05): rules=1000,10000,100000").

CPU-profile shares (cpu_share_<family>, % of all samples; suite --cpu-profile)
are compared like other metrics, their change in percentage points ("+18.0 pp").
A profiled cell (label cpu_profile=on) never matches an unprofiled one; a note
counts such cells. --flamegraph DIR writes a differential flamegraph OLD → NEW
(with --by: baseline → each value) for every compared cell profiled on both
sides, and lists the files.

The default metrics are the primary one for each test (throughput for stream
tests, transactions per second for rr, crr and http), p99 latency, UDP loss and
the normalised CPU cost (CPU % needed for 100 Gbit/s, CPU µs per transaction).

--fail-on makes compare a regression gate for CI. A compared cell fails a rule
when the whole (1 - alpha) confidence interval of its change (the ratio NEW/OLD:
Hodges-Lehmann estimate, interval inverting the Mann-Whitney test) lies past
the rule's threshold and the change is significant at alpha by its q-value
(q <= alpha over the output's rows; with one row q = p). Rules, comma-
separated or repeated:
  worse>5%           any metric with a direction, 5 % worse (lower throughput
                     or rate, higher latency or CPU cost); also slower>5%
  METRIC>+10%        METRIC increased by more than 10 %
  METRIC<-5%         METRIC decreased by more than 5 %
  cpu_share_X>+2pp   a CPU-profile share up by more than 2 percentage points
  missing            a cell OLD has and NEW lacks
--fail-on default means ` + cmp.DefaultFailOn + `.
A side may be several files joined by commas (OLD1.json,OLD2.json): their
repeats are pooled per cell, so that alternating rounds of OLD and NEW bring
the variation between runs into the intervals (hack/ci/gate.sh --rounds). Exit status: 0 no cell failed, 1 a cell
failed (listed after the tables), 2 a usage or input error. --format md writes
a pull-request comment (the significant changes first, every cell folded),
--format junit JUnit XML (one test case per compared cell); --junit FILE and
--markdown FILE write those besides the chosen format. The gate's measured
false-alarm rate and detection power are in docs/reports.md.`,
		Example: `  cnibench compare old/results.json new/results.json
  cnibench compare --by datapath --metrics trans_per_sec,latency_us_p99 results.json
  cnibench compare --by mechanism --baseline none egress/results.json
  cnibench compare --by cni --baseline flannel k8s-flannel/results.json k8s-cilium/results.json
  cnibench compare --format md old.json new.json > comparison.md
  cnibench compare --match path,test,flows lab/results.json cluster/results.json
  cnibench compare --flamegraph flames/ old/results.json new/results.json
  cnibench compare --fail-on 'worse>5%' --junit gate.xml --markdown gate.md old/results.json new/results.json
  cnibench compare --fail-on 'trans_per_sec<-5%,latency_us_p99>+10%,cpu_us_per_trans>+5%' old.json new.json`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return clierr.Usagef("compare needs results files: OLD.json NEW.json, or --by LABEL RESULTS.json")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(s, f, args)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.by, "by", "", `compare the values of a label inside one results file (or across files, one value per file, e.g. cni): datapath, mechanism, rules, cni, ...; several labels separated by commas compare their combinations (--by lb_mode,transport --baseline snat,vxlan)`)
	fl.StringVar(&f.baseline, "baseline", "", `reference value of the --by label (default for --by datapath: "baseline")`)
	fl.StringSliceVar(&f.metrics, "metrics", nil, "metrics to compare, comma-separated (default: the primary metric of each test, latency_us_p99, loss_pct and the CPU cost)")
	fl.StringSliceVar(&f.match, "match", nil, "with several files, match runs on these labels only, comma-separated (e.g. path,test,flows to compare a Kubernetes run with a lab run: their datapath, backend and node labels differ)")
	fl.StringVar(&f.format, "format", "text", "output format: text, md, json, or junit (with --fail-on)")
	fl.StringArrayVar(&f.failOn, "fail-on", nil, "regression gate: exit 1 when a cell is past one of these rules, e.g. 'worse>5%' or 'trans_per_sec<-5%,latency_us_p99>+10%'; 'default' means "+cmp.DefaultFailOn+" (see above)")
	fl.Float64Var(&f.alpha, "fail-alpha", cmp.DefaultGateAlpha, "significance level of the gate; its intervals are at 1 - alpha")
	fl.StringVar(&f.junit, "junit", "", "with --fail-on, also write JUnit XML (one test case per compared cell) to this file")
	fl.StringVar(&f.markdown, "markdown", "", "with --fail-on, also write the pull-request comment (Markdown) to this file")
	fl.StringArrayVar(&f.where, "where", nil, "compare only the runs with these labels: LABEL=VALUE[|VALUE…], comma-separated or repeated (e.g. path=cross-node,flows=1,datapath=veth-routing|ebpf-host-routing); with --by the baseline's runs are kept")
	fl.StringVar(&f.flame, "flamegraph", "", "write a differential CPU flamegraph (SVG) into this directory for every compared cell both sides profiled (suite --cpu-profile): OLD → NEW with two or more files, baseline → value with --by")
	return c
}

func run(s streams.IOStreams, f *flags, args []string) error {
	switch f.format {
	case "text", "md", "json":
	case "junit":
		if len(f.failOn) == 0 {
			return clierr.Usagef("--format junit: needs the gate; add --fail-on (e.g. --fail-on '%s')", cmp.DefaultFailOn)
		}
	default:
		return clierr.Usagef("--format %s: must be text, md, json or junit", f.format)
	}
	// Checked with or without --fail-on: a value that cannot be meant is
	// refused before any file is read.
	if err := cmp.CheckAlpha(f.alpha); err != nil {
		return clierr.Usagef("%v", err)
	}
	var rules []cmp.Rule
	if len(f.failOn) > 0 {
		var err error
		if rules, err = cmp.ParseRules(f.failOn); err != nil {
			return clierr.Usagef("%s", err.Error())
		}
	} else {
		for flag, v := range map[string]string{"--junit": f.junit, "--markdown": f.markdown} {
			if v != "" {
				return clierr.Usagef("%s %s: written by the gate; add --fail-on (e.g. --fail-on '%s')", flag, v, cmp.DefaultFailOn)
			}
		}
	}
	// The gate's files are opened before any work, so that a path that
	// cannot be written is refused at once; on a later error a file this
	// run created is removed again.
	var outs []*outFile
	defer func() {
		for _, o := range outs {
			o.abandon()
		}
	}()
	for _, want := range []struct {
		path     string
		markdown bool
	}{{f.junit, false}, {f.markdown, true}} {
		if want.path == "" {
			continue
		}
		o, err := openOut(want.path, want.markdown)
		if err != nil {
			return err
		}
		outs = append(outs, o)
	}
	var mode cmp.Mode
	switch f.by {
	case "", "file":
		mode = cmp.ByFile
		if f.baseline != "" {
			return clierr.Usagef("--baseline %s: only used with --by LABEL", f.baseline)
		}
		if len(args) < 2 {
			return clierr.Usagef("compare needs at least two files (OLD.json NEW.json), or --by LABEL with one file")
		}
	default:
		mode = cmp.Mode(f.by)
		// Several files: each value of the label from one file (--by cni:
		// one CNI per cluster), pooled by the comparison.
	}
	var metrics []string
	for _, m := range f.metrics {
		if m = strings.TrimSpace(m); m != "" {
			metrics = append(metrics, m)
		}
	}
	w, err := parseWhere(f.where)
	if err != nil {
		return clierr.Usagef("%s", err.Error())
	}
	var inputs []cmp.Input
	for _, arg := range args {
		set, err := readSide(arg)
		if err == nil {
			err = report.CheckSize(sideName(arg), set)
		}
		if err == nil {
			set, err = w.filter(set, f.by, f.baseline, arg)
		}
		if err != nil {
			// Input, not a regression: exit 2, as the gate documents.
			return clierr.Usagef("%s", err.Error())
		}
		inputs = append(inputs, cmp.Input{Name: sideName(arg), Set: set})
	}
	var match []string
	for _, m := range f.match {
		if m = strings.TrimSpace(m); m != "" {
			match = append(match, m)
		}
	}
	if len(match) > 0 && mode != cmp.ByFile {
		return clierr.Usagef("--match: only used when comparing files; drop --by or --match")
	}
	res, err := cmp.Compare(inputs, cmp.Options{Mode: mode, Baseline: f.baseline, Metrics: metrics, Match: match})
	var ue *cmp.UsageError
	if errors.As(err, &ue) {
		return clierr.Usagef("%s", ue.Msg)
	}
	if err != nil {
		return clierr.Usagef("%s", err.Error()) // nothing to compare: the inputs do not match
	}
	if rules != nil {
		if _, err := res.Gate(cmp.GateOptions{Rules: rules, Alpha: f.alpha}); err != nil {
			if errors.As(err, &ue) {
				return clierr.Usagef("%s", ue.Msg)
			}
			return err
		}
	}
	switch f.format {
	case "md":
		err = res.WriteGateMarkdown(s.Out)
	case "json":
		err = res.WriteJSON(s.Out)
	case "junit":
		err = res.WriteJUnit(s.Out)
	default:
		if err = res.WriteText(s.Out); err == nil {
			err = res.WriteGateText(s.Out)
		}
	}
	if err != nil {
		// Exit 2, never 1: 1 means a regression.
		return clierr.Usagef("write the comparison to standard output: %v", err)
	}
	for _, o := range outs {
		write := res.WriteJUnit
		if o.markdown {
			write = res.WriteGateMarkdown
		}
		if err := o.write(write); err != nil {
			return err
		}
	}
	if err := writeFlamegraphs(s, f, inputs, mode, match); err != nil {
		return err
	}
	if g := res.GateResult; g != nil && g.Failed() {
		return fmt.Errorf("regression gate failed: %d cell(s) past --fail-on %s (listed above)", len(g.Failures), g.RuleText())
	}
	if g := res.GateResult; g != nil && g.Judged() == 0 && len(g.Unjudged) > 0 {
		// Neither pass nor fail: every cell the rules apply to is
		// without a verdict (configurations differ, a busy host, too
		// few repeats). Exit 2: the inputs cannot answer.
		return clierr.Usagef("regression gate: no cell could be judged (%s; listed above): compare runs of the same configuration", g.Unjudged[0].Why)
	}
	return nil
}

// readSide reads one side of a comparison: a file, or several joined by
// commas whose repeats are pooled (result.Merge), e.g. the rounds of a CI
// gate that alternated OLD and NEW.
func readSide(arg string) (*result.Set, error) {
	var sets []*result.Set
	for _, path := range strings.Split(arg, ",") {
		if path == "" {
			return nil, fmt.Errorf("%q: an empty file name in a comma-separated list", arg)
		}
		set, err := result.ReadFile(path)
		if err != nil {
			return nil, err
		}
		sets = append(sets, set)
	}
	return result.Merge(sets...)
}

// sideName names a side in the output: the file, or the first of a
// pooled list and how many more were pooled with it.
func sideName(arg string) string {
	files := strings.Split(arg, ",")
	if len(files) == 1 {
		return arg
	}
	return fmt.Sprintf("%s (+%d pooled)", files[0], len(files)-1)
}

// outFile is one of the gate's output files (--junit, --markdown), opened
// before the comparison.
type outFile struct {
	path     string
	markdown bool // the pull-request comment; else JUnit XML
	fh       *os.File
	created  bool // by this run: removed again if it is not written
	done     bool
}

// openOut opens path for writing; an error is a one-line usage error (exit
// 2, never 1, which means a regression).
func openOut(path string, markdown bool) (*outFile, error) {
	_, statErr := os.Stat(path)
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return nil, clierr.Usagef("%s: %v", path, err)
	}
	return &outFile{path: path, markdown: markdown, fh: fh, created: errors.Is(statErr, os.ErrNotExist)}, nil
}

// write writes the file's content (truncating what was there); its errors
// exit 2 too.
func (o *outFile) write(w func(io.Writer) error) error {
	o.done = true
	err := o.fh.Truncate(0)
	if err == nil {
		err = w(o.fh)
	}
	if cerr := o.fh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return clierr.Usagef("write %s: %v", o.path, err)
	}
	return nil
}

// abandon closes a file that was not written, and removes it if this run
// created it.
func (o *outFile) abandon() {
	if o.done {
		return
	}
	o.fh.Close()
	if o.created {
		os.Remove(o.path)
	}
}

func writeFlamegraphs(s streams.IOStreams, f *flags, inputs []cmp.Input, mode cmp.Mode, match []string) error {
	var ue *cmp.UsageError
	if f.flame == "" {
		return nil
	}
	direction := "OLD → NEW"
	if mode != cmp.ByFile {
		direction = "baseline → " + string(mode)
	}
	written, notes, err := cmp.WriteFlamegraphs(inputs, cmp.Options{Mode: mode, Baseline: f.baseline, Match: match}, f.flame)
	if errors.As(err, &ue) {
		return clierr.Usagef("%s", ue.Msg)
	}
	if err != nil {
		return err
	}
	w := s.Out
	if f.format == "json" {
		w = s.ErrOut // keep standard output one JSON document
	}
	prefix := ""
	if f.format == "md" {
		prefix = "- "
		fmt.Fprintf(w, "\n### Differential flamegraphs (%s)\n\n", direction)
	} else {
		fmt.Fprintf(w, "\nDifferential flamegraphs (%s):\n", direction)
		prefix = "  "
	}
	for _, g := range written {
		fmt.Fprintf(w, "%s%s: %s\n", prefix, report.CellName(g.Labels), g.Path)
	}
	if len(written) == 0 {
		fmt.Fprintf(w, "%snone: no compared cell has a CPU profile on both sides (cnibench suite --cpu-profile)\n", prefix)
	}
	for _, n := range notes {
		fmt.Fprintf(w, "%snot drawn: %s\n", prefix, n)
	}
	return nil
}
