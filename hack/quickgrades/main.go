// Command quickgrades tabulates the graded summary of several runs of the
// same suite — each cell's ratio to the baseline and the half-width of
// its 95 % interval, as the report computes them (report.SummaryGrades) —
// and how far the runs' ratios spread against those intervals. It backs
// docs/reports.md's "The quick profile" (five runs of the quick profile).
//
//	go run ./hack/quickgrades [-path cross-node] RESULTS...
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/pkg/result"
	"github.com/cnibench/cnibench/pkg/stats"
)

var path = flag.String("path", "cross-node", "the summary table to tabulate (its path label)")

func main() {
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: quickgrades [-path P] RESULTS...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := write(os.Stdout, flag.Args(), *path); err != nil {
		fmt.Fprintln(os.Stderr, "quickgrades:", err)
		os.Exit(1)
	}
}

// The verdict rule of docs/reports.md, fixed before the runs: a cell
// within ±10 %, a run with its median half-width within it and at least
// 12 of 16 cells within it.
const goal = 0.10

type key struct{ datapath, test string }

// write prints the per-run table and the spread across runs.
func write(w io.Writer, files []string, path string) error {
	var keys []key
	runs := make([]map[key]report.GradedCell, len(files))
	var walls []float64
	sets := make([]*result.Set, len(files))
	for i, f := range files {
		set, err := result.ReadFile(f)
		if err != nil {
			return err
		}
		sets[i] = set
		walls = append(walls, set.End.Sub(set.Start).Seconds())
		runs[i] = map[key]report.GradedCell{}
		for _, c := range report.SummaryGrades(set) {
			if c.Path != path {
				continue
			}
			k := key{c.Datapath, c.Test}
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
			runs[i][k] = c
		}
	}
	if len(keys) == 0 {
		return fmt.Errorf("no graded %s cells in %s", path, strings.Join(files, ", "))
	}
	// Tests first, as the summary's columns read; datapaths in first-seen order.
	var order []key
	for _, test := range headline {
		for _, k := range keys {
			if k.test == test {
				order = append(order, k)
			}
		}
	}
	for _, k := range keys {
		if !slices.Contains(order, k) {
			order = append(order, k)
		}
	}

	fmt.Fprintf(w, "Graded %s cells: the ratio to the baseline and the half-width of its 95 %% interval.\n\n", path)
	fmt.Fprint(w, "| cell |")
	for _, f := range files {
		fmt.Fprintf(w, " %s |", name(f))
	}
	fmt.Fprint(w, "\n|---|")
	for range files {
		fmt.Fprint(w, "---:|")
	}
	fmt.Fprint(w, "\n| wall time (results) |")
	for _, s := range walls {
		fmt.Fprintf(w, " %.0f s |", s)
	}
	fmt.Fprintln(w)
	for _, test := range headline {
		fmt.Fprintf(w, "| baseline %s (median) |", test)
		for _, set := range sets {
			fmt.Fprintf(w, " %s |", baselineMedian(set, test))
		}
		fmt.Fprintln(w)
	}
	for _, k := range order {
		fmt.Fprintf(w, "| %s %s |", k.datapath, k.test)
		for _, r := range runs {
			c, ok := r[k]
			if !ok {
				fmt.Fprint(w, " — |")
				continue
			}
			fmt.Fprintf(w, " %.0f %% ±%.1f %% |", 100*c.Ratio, 100*c.HalfWidth())
		}
		fmt.Fprintln(w)
	}
	var medians, within, single, quads []string
	for i, r := range runs {
		q := quadrature(sets[i], path)
		slices.Sort(q)
		in := 0
		for _, h := range q {
			if h <= goal {
				in++
			}
		}
		quads = append(quads, fmt.Sprintf(" ±%.1f %%, %d/%d |", 100*median(q), in, len(q)))
		var hws []float64
		inHL, one := 0, 0
		for _, c := range r {
			hws = append(hws, c.HalfWidth())
			if c.HalfWidth() <= goal {
				inHL++
			}
			if c.Worst == c.Best {
				one++
			}
		}
		slices.Sort(hws)
		medians = append(medians, fmt.Sprintf(" ±%.1f %% |", 100*median(hws)))
		within = append(within, fmt.Sprintf(" %d/%d |", inHL, len(r)))
		single = append(single, fmt.Sprintf(" %d/%d |", one, len(r)))
	}
	fmt.Fprintf(w, "| median half-width |%s\n", strings.Join(medians, ""))
	fmt.Fprintf(w, "| cells within ±%.0f %% |%s\n", 100*goal, strings.Join(within, ""))
	fmt.Fprintf(w, "| cells with one grade |%s\n", strings.Join(single, ""))
	fmt.Fprintf(w, "| before 2026-11-28 (the medians' intervals in quadrature): median half-width, cells within ±%.0f %% |%s\n", 100*goal, strings.Join(quads, ""))

	fmt.Fprintf(w, "\nAcross the runs: the spread of each cell's ratio, and how many runs' intervals hold the median of the runs' ratios.\n\n")
	fmt.Fprint(w, "| cell | ratios (min–max) | median ratio | its spread | intervals holding the median |\n|---|---:|---:|---:|---:|\n")
	held, total := 0, 0
	for _, k := range order {
		var rs []float64
		for _, r := range runs {
			if c, ok := r[k]; ok {
				rs = append(rs, c.Ratio)
			}
		}
		slices.Sort(rs)
		m := median(rs)
		n := 0
		for _, r := range runs {
			if c, ok := r[k]; ok && c.Lo <= m && m <= c.Hi {
				n++
			}
		}
		held += n
		total += len(rs)
		fmt.Fprintf(w, "| %s %s | %.0f–%.0f %% | %.0f %% | ±%.1f %% | %d/%d |\n", k.datapath, k.test,
			100*rs[0], 100*rs[len(rs)-1], 100*m, 100*math.Max(rs[len(rs)-1]/m-1, 1-rs[0]/m), n, len(rs))
	}
	fmt.Fprintf(w, "\nIntervals holding their cell's median ratio: %d of %d.\n", held, total)
	return nil
}

// headline are the tests of the quick profile's graded summary.
var headline = []string{"tcp_stream", "tcp_rr", "tcp_crr"}

// baselineMedian is the node-to-node baseline's median of test at one
// flow, with its unit ("—" when not measured).
func baselineMedian(set *result.Set, test string) string {
	for i := range set.Runs {
		r := &set.Runs[i]
		if r.Labels["datapath"] != report.BaselineDatapath || r.Labels["test"] != test || r.Labels["flows"] != "1" {
			continue
		}
		m := report.PrimaryMetric(test)
		if s, ok := report.Summary(r, m); ok {
			sc := report.ScaleFor(m, s.Median)
			return fmt.Sprintf("%.3g %s", s.Median/sc.Div, sc.Unit)
		}
	}
	return "—"
}

// quadrature is the half-width of every headline cell's ratio by the rule
// the grades used before 2026-11-28: the log half-widths of the two
// medians' 95 % intervals added in quadrature.
func quadrature(set *result.Set, path string) []float64 {
	lhw := func(s stats.Summary) float64 {
		return math.Max(math.Log(s.CI95High/s.Median), math.Log(s.Median/s.CI95Low))
	}
	var out []float64
	for i := range set.Runs {
		r := &set.Runs[i]
		test := r.Labels["test"]
		if r.Labels["path"] != path || !slices.Contains(headline, test) || r.Labels["flows"] != "1" {
			continue
		}
		for j := range set.Runs {
			b := &set.Runs[j]
			if b.Labels["datapath"] != report.BaselineDatapath || b.Labels["test"] != test || b.Labels["flows"] != "1" || b.Labels["mtu"] != r.Labels["mtu"] {
				continue
			}
			sd, ok1 := report.Summary(r, report.PrimaryMetric(test))
			sb, ok2 := report.Summary(b, report.PrimaryMetric(test))
			if ok1 && ok2 && sd.Median > 0 && sb.Median > 0 {
				out = append(out, math.Expm1(math.Hypot(lhw(sd), lhw(sb))))
			}
		}
	}
	return out
}

// name is a results file's column: its base name without the results
// suffixes.
func name(f string) string {
	b := filepath.Base(f)
	for _, suf := range []string{".gz", ".json", ".results"} {
		b = strings.TrimSuffix(b, suf)
	}
	if b == "results" {
		b = filepath.Base(filepath.Dir(f))
	}
	return b
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}
