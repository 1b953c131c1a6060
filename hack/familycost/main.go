// Command familycost prints, from a results.json of profiled cells
// (cnibench suite --cpu-profile), the CPU time per transaction spent in
// each symbol family — samples × the family's share ÷ the sampling rate ÷
// the window's transactions, per repeat — as medians with their 95 %
// interval, and the two-sided Mann–Whitney U p-value of each datapath
// against a reference datapath, per path and test. It is how
// docs/findings.md §1c turns shares into µs per transaction.
//
//	go run ./hack/familycost -ref ebpf-host-routing results.json
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"

	"github.com/cnibench/cnibench/internal/profile"
	"github.com/cnibench/cnibench/pkg/result"
	"github.com/cnibench/cnibench/pkg/stats"
)

func main() {
	ref := flag.String("ref", "ebpf-host-routing", "reference datapath")
	incl := flag.Bool("inclusive", false, "inclusive shares (a frame of the family anywhere on the stack) instead of exclusive")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: familycost [-ref DATAPATH] [-inclusive] results.json")
		os.Exit(2)
	}
	set, err := result.ReadFile(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	prefix := result.CPUSharePrefix
	if *incl {
		prefix = result.CPUInclPrefix
	}
	hz := 999.0
	if v, err := strconv.ParseFloat(set.Config["cpu_profile_hz"], 64); err == nil && v > 0 {
		hz = v
	}
	perTrans := func(r *result.Run, fam string) []float64 {
		var out []float64
		for _, rep := range r.Repeats {
			m := rep.Metrics
			tr := m[result.TransPerSec] * rep.DurationSec
			if rep.Error != "" || tr == 0 {
				continue
			}
			out = append(out, m[profile.SamplesMetric]*m[prefix+fam]/100/hz/tr*1e6)
		}
		return out
	}
	type key struct{ path, test string }
	refs := map[key]*result.Run{}
	for i := range set.Runs {
		r := &set.Runs[i]
		if r.Labels["datapath"] == *ref && r.Profile != nil {
			refs[key{r.Labels["path"], r.Labels["test"]}] = r
		}
	}
	fmt.Printf("µs of CPU per transaction by family (%s), median [95 %% interval], vs %s: Mann–Whitney p\n", prefix+"*", *ref)
	for i := range set.Runs {
		r := &set.Runs[i]
		base := refs[key{r.Labels["path"], r.Labels["test"]}]
		if r.Profile == nil || base == nil || r == base {
			continue
		}
		fmt.Printf("\n%s vs %s, %s %s ×%s\n", r.Labels["datapath"], *ref, r.Labels["path"], r.Labels["test"], r.Labels["flows"])
		fams := make([]string, 0, len(profile.Families))
		for _, f := range profile.Families {
			fams = append(fams, f.Name)
		}
		fams = slices.DeleteFunc(fams, func(f string) bool { return f == profile.FamilyOtherProcs })
		for _, f := range append(fams, profile.FamilyOtherProcs) {
			a, b := perTrans(base, f), perTrans(r, f)
			sa, sb := stats.Summarize(a), stats.Summarize(b)
			if sa.Max < 0.05 && sb.Max < 0.05 {
				continue
			}
			c := stats.Compare(a, b)
			p := fmt.Sprintf("p=%.3f", c.P)
			if c.P < 0.001 {
				p = "p<0.001"
			}
			fmt.Printf("  %-13s %8.2f [%.2f…%.2f]  %8.2f [%.2f…%.2f]  %s\n", f, sa.Median, sa.CI95Low, sa.CI95High, sb.Median, sb.CI95Low, sb.CI95High, p)
		}
	}
}
