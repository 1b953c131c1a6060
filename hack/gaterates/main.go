// Command gaterates measures the regression gate's error rates (compare
// --fail-on) on runs collected by collect.sh: each run holds veth-routing
// and veth-routing-cost (the same datapath plus a known per-packet cost),
// measured interleaved in one suite invocation. Runs are paired across
// invocations, as a CI job compares two builds:
//
//   - same-build pairs: a datapath of run 2j against the same datapath of
//     run 2j+1 (both datapaths: K pairs from K runs). The gate failing
//     on one is a false alarm.
//   - injected pairs: veth-routing of run 2j against veth-routing-cost of
//     run 2j+1, and of run 2j+1 against run 2j (K pairs). The gate failing
//     on one is a detection.
//
// The two same-build pairs of a block come from the same runs, and so do
// its two injected pairs: they are not independent, and a Wilson interval
// over pairs is too narrow. So the blocks are counted too, conservatively:
// a block is a false alarm when either of its same-build pairs fails, and
// a detection only when both of its injected pairs do, with intervals over
// the blocks.
//
// Pairs are matched on path, test, flows and mtu (compare --match), with
// the default metrics of each test, and gated at every threshold and
// significance level of the grid. It also prints the injected slowdown
// itself: per cell and metric, the median over runs of the within-run
// ratio cost/veth-routing (both measured in one invocation, interleaved).
//
//	go run ./hack/gaterates [-rounds K] DIR [DIR...]
//
// DIR holds run-NN/results.json (or .json.gz); each DIR is reported apart
// (one per profile).
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"

	"github.com/cnibench/cnibench/internal/report"
	cmp "github.com/cnibench/cnibench/internal/report/compare"
	"github.com/cnibench/cnibench/pkg/result"
	"github.com/cnibench/cnibench/pkg/stats"
)

const (
	plain = "veth-routing"
	cost  = "veth-routing-cost"
)

var rounds = flag.Int("rounds", 1, "runs pooled per side (gate.sh --rounds): each block of 2×rounds runs gives side A its even runs and side B its odd ones")

var (
	thresholds = []float64{2, 3, 5, 10}
	alphas     = []float64{0.05, 0.01}
	match      = []string{"path", "test", "flows", "mtu"}
)

func main() {
	series := flag.String("series", "", "instead, write a series for `cnibench report --trend` into this directory: the first half of DIR's runs as veth-routing, the second half as veth-routing-cost (one file per point, datapath label removed)")
	flag.Parse()
	if *rounds < 1 {
		fmt.Fprintln(os.Stderr, "gaterates: -rounds: at least 1")
		os.Exit(2)
	}
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: gaterates DIR [DIR...] | gaterates -series OUT DIR")
		os.Exit(2)
	}
	if *series != "" {
		if err := writeSeries(*series, flag.Arg(0)); err != nil {
			fmt.Fprintf(os.Stderr, "gaterates: %v\n", err)
			os.Exit(1)
		}
		return
	}
	for _, dir := range flag.Args() {
		if err := report1(os.Stdout, dir); err != nil {
			fmt.Fprintf(os.Stderr, "gaterates: %s: %v\n", dir, err)
			os.Exit(1)
		}
	}
}

// load reads the runs of dir in name order.
func load(dir string) ([]*result.Set, []string, error) {
	paths, _ := filepath.Glob(filepath.Join(dir, "run-*", "results.json*"))
	sort.Strings(paths)
	var sets []*result.Set
	for _, p := range paths {
		s, err := read(p)
		if err != nil {
			return nil, nil, err
		}
		sets = append(sets, s)
	}
	if len(sets) < 4 {
		return nil, nil, fmt.Errorf("%d runs: need at least 4", len(sets))
	}
	return sets, paths, nil
}

func read(path string) (*result.Set, error) {
	s, err := result.ReadFile(path) // gunzips .gz
	if err != nil {
		return nil, err
	}
	// The committed copies leave out the summaries (they are computed
	// from the repeats) and the latency histograms.
	for i := range s.Runs {
		if len(s.Runs[i].Summary) == 0 {
			s.Runs[i].Summary = result.SummarizeRepeats(s.Runs[i].Repeats)
		}
	}
	return s, nil
}

// only returns the runs of s with datapath dp.
func only(s *result.Set, dp string) *result.Set {
	out := *s
	out.Runs = nil
	for _, r := range s.Runs {
		if r.Labels[report.LabelDatapath] == dp {
			out.Runs = append(out.Runs, r)
		}
	}
	return &out
}

type pair struct {
	old, new *result.Set
	name     string
}

// tally counts, for one threshold and alpha, the pairs whose gate failed
// and the gated cell metrics that failed.
type tally struct {
	pairs, pairsFailed     int
	blocks, blocksFailed   int
	metrics, metricsFailed int
	unjudged               int
}

func gate(p pair, limit, alpha float64) (failed, judged, fails, unjudged int, err error) {
	r, err := cmp.Compare([]cmp.Input{{Name: "old", Set: p.old}, {Name: "new", Set: p.new}}, cmp.Options{Match: match})
	if err != nil {
		return 0, 0, 0, 0, err
	}
	rules, err := cmp.ParseRules([]string{fmt.Sprintf("worse>%g%%", limit)})
	if err != nil {
		return 0, 0, 0, 0, err
	}
	g, err := r.Gate(cmp.GateOptions{Rules: rules, Alpha: alpha})
	if err != nil {
		return 0, 0, 0, 0, err
	}
	if g.Failed() {
		failed = 1
	}
	return failed, len(g.Failures) + g.Passed, len(g.Failures), len(g.Unjudged), nil
}

func report1(w io.Writer, dir string) error {
	sets, paths, err := load(dir)
	if err != nil {
		return err
	}
	var same, injected []pair
	// Blocks of 2·rounds consecutive runs: side A the even runs of the
	// block, side B the odd ones, as gate.sh --rounds alternates base and
	// change; each side's runs pooled (result.Merge).
	k := *rounds
	side := func(ss []*result.Set, dp string) *result.Set {
		var parts []*result.Set
		for _, s := range ss {
			parts = append(parts, only(s, dp))
		}
		m, err := result.Merge(parts...)
		if err != nil {
			panic(err) // one machine: cannot happen
		}
		return m
	}
	for j := 0; j+2*k <= len(sets); j += 2 * k {
		var a, b []*result.Set
		for i := 0; i < 2*k; i += 2 {
			a, b = append(a, sets[j+i]), append(b, sets[j+i+1])
		}
		same = append(same,
			pair{side(a, plain), side(b, plain), fmt.Sprintf("block %d %s", j, plain)},
			pair{side(a, cost), side(b, cost), fmt.Sprintf("block %d %s", j, cost)})
		injected = append(injected,
			pair{side(a, plain), side(b, cost), fmt.Sprintf("block %d A→B", j)},
			pair{side(b, plain), side(a, cost), fmt.Sprintf("block %d B→A", j)})
	}
	cfg := sets[0].Config
	fmt.Fprintf(w, "## %s, %d round(s) per side\n\n%d runs (%s … %s); profile %s, repeats %s, window %s; %d same-build pairs, %d injected pairs, from %d blocks of %d runs (two of each per block, from the same runs)\n\n",
		dir, k, len(sets), filepath.Base(filepath.Dir(paths[0])), filepath.Base(filepath.Dir(paths[len(paths)-1])),
		cfg["profile"], cfg["repeat"], cfg["duration"], len(same), len(injected), len(same)/2, 2*k)
	fmt.Fprintln(w, "| rule | alpha | false alarms (same-build pairs failed) | detections (injected pairs failed) | blocks with a false alarm (either pair) | blocks with a detection (both pairs) | same-build metrics failed | injected metrics failed | metrics without a verdict |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, alpha := range alphas {
		for _, limit := range thresholds {
			var ts [2]tally
			for k, ps := range [][]pair{same, injected} {
				// Pairs come two per block, in order (report1).
				var inBlock int
				for i, p := range ps {
					f, j, fm, u, err := gate(p, limit, alpha)
					if err != nil {
						return fmt.Errorf("pair %s: %w", p.name, err)
					}
					ts[k].pairs++
					ts[k].pairsFailed += f
					ts[k].metrics += j
					ts[k].metricsFailed += fm
					ts[k].unjudged += u
					inBlock += f
					if i%2 == 1 {
						ts[k].blocks++
						// Same-build: either pair; injected: both.
						if (k == 0 && inBlock > 0) || (k == 1 && inBlock == 2) {
							ts[k].blocksFailed++
						}
						inBlock = 0
					}
				}
			}
			fmt.Fprintf(w, "| worse>%g%% | %g | %s | %s | %s | %s | %d/%d | %d/%d | %d |\n", limit, alpha,
				rate(ts[0].pairsFailed, ts[0].pairs), rate(ts[1].pairsFailed, ts[1].pairs),
				rate(ts[0].blocksFailed, ts[0].blocks), rate(ts[1].blocksFailed, ts[1].blocks),
				ts[0].metricsFailed, ts[0].metrics, ts[1].metricsFailed, ts[1].metrics, ts[0].unjudged+ts[1].unjudged)
		}
	}
	fmt.Fprintln(w)
	return effect(w, sets)
}

// rate is k/n with its 95 % Wilson score interval.
func rate(k, n int) string {
	if n == 0 {
		return "—"
	}
	const z = 1.959964
	p := float64(k) / float64(n)
	d := 1 + z*z/float64(n)
	c := (p + z*z/(2*float64(n))) / d
	h := z * math.Sqrt(p*(1-p)/float64(n)+z*z/(4*float64(n)*float64(n))) / d
	return fmt.Sprintf("%d/%d = %.0f %% [%.0f, %.0f]", k, n, 100*p, 100*math.Max(0, c-h), 100*math.Min(1, c+h))
}

// effect prints the injected slowdown: per cell and default metric, the
// within-run ratio cost/plain of the medians, summarised over runs.
func effect(w io.Writer, sets []*result.Set) error {
	type key struct{ cell, metric string }
	ratios := map[key][]float64{}
	var order []key
	for _, s := range sets {
		base := map[string]result.Run{}
		for _, r := range s.Runs {
			if r.Labels[report.LabelDatapath] == plain {
				base[cellKey(r.Labels)] = r
			}
		}
		for _, r := range s.Runs {
			if r.Labels[report.LabelDatapath] != cost {
				continue
			}
			b, ok := base[cellKey(r.Labels)]
			if !ok {
				continue
			}
			for _, m := range report.DefaultMetrics(r.Labels[report.LabelTest]) {
				x, y := b.Summary[m], r.Summary[m]
				if x.N == 0 || y.N == 0 || x.Median <= 0 {
					continue
				}
				k := key{report.CellName(project(r.Labels)), m}
				if _, seen := ratios[k]; !seen {
					order = append(order, k)
				}
				ratios[k] = append(ratios[k], y.Median/x.Median)
			}
		}
	}
	fmt.Fprintln(w, "The injected slowdown, per cell: the median over runs of cost ÷ plain (both in one run, interleaved), with its 95 % interval")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| cell | metric | change | runs |")
	fmt.Fprintln(w, "|---|---|---:|---:|")
	for _, k := range order {
		s := stats.Summarize(ratios[k])
		fmt.Fprintf(w, "| %s | %s | %+.1f %% [%+.1f, %+.1f] | %d |\n", k.cell, k.metric, 100*(s.Median-1), 100*(s.CI95Low-1), 100*(s.CI95High-1), s.N)
	}
	fmt.Fprintln(w)
	return nil
}

func project(l map[string]string) map[string]string {
	out := map[string]string{}
	for _, k := range match {
		if v, ok := l[k]; ok {
			out[k] = v
		}
	}
	return out
}

func cellKey(l map[string]string) string { return result.LabelKey(project(l)) }

// writeSeries writes a series with a known step: point i is run i's
// veth-routing for the first half of the runs and its veth-routing-cost
// for the second, the datapath label dropped so that the points match.
func writeSeries(out, dir string) error {
	sets, _, err := load(dir)
	if err != nil {
		return err
	}
	for i, s := range sets {
		dp := plain
		if i >= len(sets)/2 {
			dp = cost
		}
		p := only(s, dp)
		for j := range p.Runs {
			l := map[string]string{}
			for k, v := range p.Runs[j].Labels {
				if k != report.LabelDatapath {
					l[k] = v
				}
			}
			p.Runs[j].Labels = l
		}
		p.Datapaths = nil
		d := filepath.Join(out, fmt.Sprintf("point-%02d", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		f, err := os.Create(filepath.Join(d, "results.json"))
		if err != nil {
			return err
		}
		if err := result.Write(f, p); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	fmt.Printf("%d points in %s: 0-%d veth-routing, %d-%d veth-routing-cost\n", len(sets), out, len(sets)/2-1, len(sets)/2, len(sets)-1)
	return nil
}
