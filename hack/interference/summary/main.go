// Command summary tabulates hack/interference/measure.sh's runs: for each
// hog size, the other programs' CPU the windows measured (the median of
// foreign_cpu_pct + steal_pct over every repeat) and how the headline
// metrics (throughput for tcp_stream, transactions per second otherwise)
// moved against the runs without a hog — the rounds of each size pooled,
// compared cell by cell as `cnibench compare` does (a change is counted
// when significant at alpha 0.05 and at least 5 %). docs/interference.md's
// threshold table comes from it.
//
//	go run ./hack/interference/summary OUT
//	go run ./hack/interference/summary docs/data/interference-2026-12-04
package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/internal/report/compare"
	"github.com/cnibench/cnibench/pkg/result"
	"github.com/cnibench/cnibench/pkg/stats"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: summary OUT")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "summary:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	// measure.sh's OUT/hog-C-rR/results.json, or the committed
	// hog-C-rR.results.json.gz (docs/data/interference-*).
	files, _ := filepath.Glob(filepath.Join(out, "hog-*-r*", "results.json"))
	gz, _ := filepath.Glob(filepath.Join(out, "hog-*-r*.results.json.gz"))
	files = append(files, gz...)
	if len(files) == 0 {
		return fmt.Errorf("no %s/hog-*-r*/results.json or hog-*-r*.results.json.gz", out)
	}
	bySize := map[string][]*result.Set{}
	for _, f := range files {
		name := filepath.Base(filepath.Dir(f))
		if strings.HasSuffix(f, ".gz") {
			name = strings.TrimSuffix(filepath.Base(f), ".results.json.gz")
		}
		size := strings.TrimPrefix(name, "hog-")
		size = size[:strings.LastIndex(size, "-r")]
		s, err := result.ReadFile(f)
		if err != nil {
			return err
		}
		bySize[size] = append(bySize[size], s)
	}
	var sizes []string
	for s := range bySize {
		sizes = append(sizes, s)
	}
	sort.Slice(sizes, func(i, j int) bool { return num(sizes[i]) < num(sizes[j]) })
	base, err := result.Merge(bySize["0"]...)
	if err != nil || bySize["0"] == nil {
		return fmt.Errorf("no runs without a hog (hog-0): %v", err)
	}
	fmt.Println("| hog (cores) | runs | other programs' CPU measured, median (p10–p90) % of a core | idle probe % | cells worse by ≥ 5 % (significant) | largest significant change |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, size := range sizes {
		sets := bySize[size]
		var fs, idle []float64
		for _, s := range sets {
			if s.Interference != nil {
				idle = append(idle, s.Interference.IdleForeignPct)
			}
			for _, r := range s.Runs {
				for _, rep := range r.Repeats {
					if p, ok := result.InterferencePct(rep.Metrics); ok && rep.Error == "" {
						fs = append(fs, p)
					}
				}
			}
		}
		worse, cells := 0, 0
		largest := 0.0
		largestCell := ""
		if size != "0" {
			pooled, err := result.Merge(sets...)
			if err != nil {
				return err
			}
			res, err := compare.Compare([]compare.Input{{Name: "hog-0", Set: base}, {Name: "hog-" + size, Set: pooled}}, compare.Options{})
			if err != nil {
				return err
			}
			for _, t := range res.Tables {
				if t.Metric != result.ThroughputBitsPerSec && t.Metric != result.TransPerSec {
					continue
				}
				for _, row := range t.Rows {
					if report.PrimaryMetric(row.Labels[report.LabelTest]) != t.Metric {
						continue
					}
					c := row.Cells[0]
					if !c.Compared {
						continue
					}
					cells++
					if c.Significant && c.Better < 0 && math.Abs(c.DeltaPct) >= 5 {
						worse++
					}
					if c.Significant && math.Abs(c.DeltaPct) > math.Abs(largest) {
						largest, largestCell = c.DeltaPct, report.CellName(row.Labels)
					}
				}
			}
		}
		q := func(p float64) float64 { return quantile(fs, p) }
		change := "—"
		if largestCell != "" {
			change = fmt.Sprintf("%+.1f %% (%s)", largest, largestCell)
		}
		fmt.Printf("| %s | %d | %.0f (%.0f–%.0f) | %s | %d of %d | %s |\n", size, len(sets), stats.Summarize(fs).Median, q(0.1), q(0.9),
			joinPct(idle), worse, cells, change)
	}
	return nil
}

func num(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }

func quantile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[int(p*float64(len(s)-1))]
}

func joinPct(v []float64) string {
	var out []string
	for _, x := range v {
		out = append(out, fmt.Sprintf("%.0f", x))
	}
	return strings.Join(out, ", ")
}
