package compare

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/pkg/result"
)

// A comparison differs in one variable: two cells compared across files
// must share what decides their measurement beyond their labels. These are
// the settings checked: a run's (its config, which holds the lab's wire)
// and a file's.
var (
	runConfigKeys = []string{"flows", "message_size", "request_size", "response_size", "duration", "warmup",
		"rate", "path_mtu", "pod_mtu", "busy_poll", "http_clients", "wire"}
	setConfigKeys = []string{"pin", "mtus"}
)

// configMismatch lists how run b (of set sb) differs from run a (of set
// sa) beyond their labels: "duration 200ms vs 2s". A setting missing on
// either side (an older document) is not a difference.
func configMismatch(a, b *result.Run, sa, sb *result.Set) []string {
	var out []string
	diff := func(what, x, y string) {
		if x != "" && y != "" && x != y {
			out = append(out, fmt.Sprintf("%s %s vs %s", what, x, y))
		}
	}
	for _, k := range runConfigKeys {
		if _, isLabel := a.Labels[k]; isLabel {
			continue // the variable compared, or shown in the row
		}
		diff(k, a.Config[k], b.Config[k])
	}
	for _, k := range setConfigKeys {
		if _, isLabel := a.Labels[k]; isLabel {
			continue
		}
		diff(k, sa.Config[k], sb.Config[k])
	}
	diff("kernel", sa.Host.Kernel, sb.Host.Kernel)
	diff("cnibench version", sa.Tool.Version, sb.Tool.Version)
	return out
}

// trustNote is why a compared cell gives no verdict on trust: either side
// was not trusted (its host was busy).
func trustNote(a, b *result.Run) string {
	for _, r := range []*result.Run{a, b} {
		if r != nil && r.NotTrusted != "" {
			return r.NotTrusted
		}
	}
	return ""
}

// mismatchNotes say, once per compared file and cell, what differs: the
// cells are reported but not gated.
func mismatchNotes(name func(i int) string, cells map[int][]cellMismatch) []string {
	var notes []string
	for i := 1; i <= maxKey(cells); i++ {
		ms := cells[i]
		if len(ms) == 0 {
			continue
		}
		// Differences every cell shares (kernel, version, pin) once.
		common := slices.Clone(ms[0].diffs)
		for _, m := range ms[1:] {
			common = slices.DeleteFunc(common, func(d string) bool { return !slices.Contains(m.diffs, d) })
		}
		var per []string
		for _, m := range ms {
			rest := slices.DeleteFunc(slices.Clone(m.diffs), func(d string) bool { return slices.Contains(common, d) })
			if len(rest) > 0 {
				per = append(per, report.CellName(m.labels)+": "+strings.Join(rest, ", "))
			}
		}
		s := fmt.Sprintf("%s and %s are not the same measurement in %d cell(s)", name(0), name(i), len(ms))
		if len(common) > 0 {
			s += " (" + strings.Join(common, ", ") + ")"
		}
		if len(per) > 0 {
			s += ": " + strings.Join(per, "; ")
		}
		notes = append(notes, s+". Their differences are shown but are not the datapath's alone; the gate gives them no verdict.")
	}
	return notes
}

type cellMismatch struct {
	labels map[string]string
	diffs  []string
}

// appendMismatch adds a cell's differences once (a cell has a row per
// metric).
func appendMismatch(ms []cellMismatch, labels map[string]string, diffs []string) []cellMismatch {
	k := result.LabelKey(labels)
	for _, m := range ms {
		if result.LabelKey(m.labels) == k {
			return ms
		}
	}
	return append(ms, cellMismatch{labels: labels, diffs: diffs})
}

func maxKey(m map[int][]cellMismatch) int {
	n := 0
	for k := range m {
		n = max(n, k)
	}
	return n
}
