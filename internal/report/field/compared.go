package field

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/pkg/result"
)

// The "What is compared" section: the runs, their machines and settings,
// and how busy their hosts were.

// comparedSection says what is compared and what else differs between the
// entries: machines first, then the runs, their settings and how busy
// their hosts were.
func comparedSection(f *Field) section {
	s := section{ID: "compared", Title: "What is compared"}
	if p := hostsPara(f); p != "" {
		s.Blocks = append(s.Blocks, block{Para: p})
	}
	interleaved := true
	for _, e := range f.Measured {
		interleaved = interleaved && e.Set.Config["interleaving"] != ""
	}
	how := "measured in the same run"
	if interleaved {
		how = "measured in the same run, its cells interleaved with the CNI's"
	}
	if len(fieldTests(f)) == 0 {
		// Scenario runs only: nothing is graded against a baseline.
		s.Blocks = append(s.Blocks, block{Para: "Each CNI configuration below is one results file, one run on its own cluster; " +
			"the CNIs were measured in separate runs, one after another, so what changed on the machines between runs is in no interval: " +
			"read a difference between two CNIs' points that their intervals do not clearly separate as none."})
	} else {
		s.Blocks = append(s.Blocks, block{Para: fmt.Sprintf("Each CNI configuration below is one results file, one run on its own cluster. "+
			"Each is graded against its own cluster's node-to-node baseline (the host network), %s; the CNIs themselves were measured in separate runs, "+
			"one after another, so what changed on the machines between runs is in no interval: read a difference between two CNIs' grades "+
			"that their intervals do not clearly separate as none.", how)})
	}
	var list []string
	for _, e := range f.Measured {
		item := fmt.Sprintf("%s: %s, from %s, measured %s", e.Name, e.ID, e.File, span(e.Set.Start, e.Set.End))
		if c := clusterOf(e.Set); c != "" {
			item += " on cluster " + c
		}
		if e.Set.Interrupted {
			item += " (INTERRUPTED: incomplete)"
		}
		list = append(list, item)
	}
	s.Blocks = append(s.Blocks, block{List: list})
	if p := settingsPara(f); p != "" {
		s.Blocks = append(s.Blocks, block{Para: p})
	}
	s.Blocks = append(s.Blocks, interferenceBlocks(f)...)
	return s
}

// hostsPara names the machines: when they differ (CPU model, cores,
// kernel) that comes first, as it weighs on every comparison below.
func hostsPara(f *Field) string {
	type host struct{ key, text string }
	var hosts []host
	distinct := map[string]bool{}
	for _, e := range f.Measured {
		h := e.Set.Host
		key := fmt.Sprintf("%s|%d|%s", h.CPUModel, h.Cores, h.Kernel)
		distinct[key] = true
		hosts = append(hosts, host{key, hostText(h)})
	}
	if len(distinct) > 1 {
		var parts []string
		for i, e := range f.Measured {
			parts = append(parts, e.Name+" on "+hosts[i].text)
		}
		return "The runs ran on different machines (CPU model, cores or kernel differ): " + strings.Join(parts, "; ") +
			". Each CNI is still graded against a baseline of its own machine, but a difference between CNIs may be the machines'."
	}
	names := map[string]bool{}
	for _, e := range f.Measured {
		names[e.Set.Host.Hostname] = true
	}
	what := "one machine"
	if len(names) > 1 {
		what = "machines of one kind"
	}
	all := fmt.Sprintf("All %d runs", len(f.Measured))
	if len(f.Measured) == 2 {
		all = "Both runs"
	}
	return fmt.Sprintf("%s ran on %s: %s (each file's host facts: on a cluster, the machine that drove the suite).",
		all, what, hostText(f.Measured[0].Set.Host))
}

func hostText(h result.Host) string {
	var parts []string
	if h.Hostname != "" {
		parts = append(parts, h.Hostname)
	}
	if h.CPUModel != "" {
		parts = append(parts, h.CPUModel)
	}
	if h.Cores > 0 {
		parts = append(parts, strconv.Itoa(h.Cores)+" cores")
	}
	if h.Kernel != "" {
		parts = append(parts, "kernel "+h.Kernel)
	}
	if len(parts) == 0 {
		return "host facts not recorded"
	}
	return strings.Join(parts, ", ")
}

// span is "2026-11-25 02:32–02:40 UTC" (the end's date too when it differs).
func span(start, end time.Time) string {
	if start.IsZero() {
		return "at an unrecorded time"
	}
	s := start.UTC().Format("2006-01-02 15:04")
	if !end.IsZero() {
		if end.UTC().Format("2006-01-02") == start.UTC().Format("2006-01-02") {
			s += "–" + end.UTC().Format("15:04")
		} else {
			s += " – " + end.UTC().Format("2006-01-02 15:04")
		}
	}
	return s + " UTC"
}

func clusterOf(set *result.Set) string {
	if c := set.Config["cluster"]; c != "" {
		return c
	}
	for _, r := range set.Runs {
		if c := r.Labels["cluster"]; c != "" {
			return c
		}
	}
	return ""
}

// sharedSettings are the suite settings named when the runs share them.
var sharedSettings = []string{"profile", "repeat", "duration", "warmup", "flows", "tests", "mtus", "pin", "wire", "seed", "checks"}

// settingsDiffer are the suite settings whose values differ between the
// entries: "repeat: 5 for flannel; 3 for cilium".
func settingsDiffer(f *Field) []string {
	keys := map[string]bool{}
	for _, e := range f.Measured {
		for k := range e.Set.Config {
			keys[k] = true
		}
	}
	var differ []string
	var sorted []string
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		switch k {
		case LabelCNI, LabelCNIMode, LabelCNIVersion, "cluster":
			continue // what is compared, or said above
		}
		vals := map[string]bool{}
		for _, e := range f.Measured {
			vals[e.Set.Config[k]] = true
		}
		if len(vals) > 1 {
			// grouped by value, in the order the runs are listed: a CNI's
			// name may hold commas of its own
			var order []string
			by := map[string][]string{}
			for _, e := range f.Measured {
				v := orDash(e.Set.Config[k])
				if _, ok := by[v]; !ok {
					order = append(order, v)
				}
				by[v] = append(by[v], e.Name)
			}
			var parts []string
			for _, v := range order {
				parts = append(parts, v+" for "+strings.Join(by[v], " / "))
			}
			differ = append(differ, k+": "+strings.Join(parts, "; "))
		}
	}
	return differ
}

// settingsPara says which suite settings the runs share and which differ.
func settingsPara(f *Field) string {
	keys := map[string]bool{}
	for _, e := range f.Measured {
		for k := range e.Set.Config {
			keys[k] = true
		}
	}
	var same []string
	for _, k := range sharedSettings {
		v := f.Measured[0].Set.Config[k]
		if v == "" || !keys[k] {
			continue
		}
		all := true
		for _, e := range f.Measured[1:] {
			all = all && e.Set.Config[k] == v
		}
		if all {
			same = append(same, k+" "+v)
		}
	}
	var out []string
	if len(same) > 0 {
		out = append(out, "The runs share these suite settings: "+strings.Join(same, ", ")+".")
	}
	for _, d := range settingsDiffer(f) {
		out = append(out, "They differ in "+d+".")
	}
	return strings.Join(out, " ")
}

// interferenceBlocks give each busy run's interference line, and say
// which runs recorded none.
func interferenceBlocks(f *Field) []block {
	var busy, unjudged, quiet, none []string
	for _, e := range f.Measured {
		in := e.Set.Interference
		switch {
		case in == nil:
			none = append(none, e.Name)
		case in.ThresholdPct <= 0:
			// --busy-threshold 0: nothing marked, so nothing says quiet
			unjudged = append(unjudged, e.Name+": "+report.InterferenceNote(e.Set))
		case in.Busy > 0 || in.NotTrusted > 0:
			busy = append(busy, e.Name+": "+report.InterferenceNote(e.Set))
		default:
			quiet = append(quiet, e.Name)
		}
	}
	var out []block
	if len(busy) > 0 {
		out = append(out, block{Para: "Runs whose host was busy with other programs (docs/interference.md):"}, block{List: busy})
	}
	if len(unjudged) > 0 {
		out = append(out, block{Para: "Runs that marked no repeat busy because they were told not to (--busy-threshold 0): how busy their host was, as measured (docs/interference.md):"}, block{List: unjudged})
	}
	var parts []string
	if len(quiet) > 0 {
		parts = append(parts, "The host was quiet (no repeat past the busy threshold) in "+strings.Join(quiet, ", ")+".")
	}
	if len(none) == len(f.Measured) {
		parts = append(parts, "No run records how busy its host was (documents from before it was measured).")
	} else if len(none) > 0 {
		parts = append(parts, "How busy the host was is not recorded in "+strings.Join(none, ", ")+" (documents from before it was measured).")
	}
	if len(parts) > 0 {
		out = append(out, block{Para: strings.Join(parts, " ")})
	}
	return out
}
