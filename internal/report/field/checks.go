package field

import (
	"fmt"
	"math"
	"strings"

	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/pkg/result"
)

// Checks of the Kubernetes backend (docs/kubernetes.md) the field shows.
const (
	checkPolicy     = "network_policy"
	checkEncryption = "encryption"
	checkFootprint  = "cni_footprint"
	checkMTU        = "mtu"
)

// finding is the entry's finding of check; nil when the run did not make it.
func finding(e *Entry, check string) *result.Finding {
	for i := range e.Set.Findings {
		if e.Set.Findings[i].Check == check {
			return &e.Set.Findings[i]
		}
	}
	return nil
}

// notChecked is the cell of a check the run did not make.
func notChecked(e *Entry) cell {
	why := "the run made no such check"
	if c := e.Set.Config["checks"]; c != "" {
		why = "the run's checks were " + c
	}
	return cell{Text: "not checked", Note: why}
}

// verdictCell shows a finding's verdict, its summary as the note.
func verdictCell(e *Entry, check string) cell {
	fd := finding(e, check)
	if fd == nil {
		return notChecked(e)
	}
	return cell{Text: orDash(fd.Verdict), Class: report.VerdictClass(fd.Verdict), Note: fd.Summary}
}

func securitySection(f *Field) section {
	s := section{ID: "security", Title: "Security"}
	s.Blocks = append(s.Blocks, block{Para: "What each cluster did, tested with real connections: NetworkPolicy enforced or not " +
		"(ingress deny, allow list, egress deny), and pod-to-pod traffic encrypted on the wire or in clear (a capture on the node looking for the " +
		"payload's marker). A verdict is what was observed with this configuration, not what the CNI can do configured otherwise."})
	t := &table{Header: []string{"CNI", "NetworkPolicy", "Encryption"}, Right: []bool{false, false, false}}
	for _, e := range f.Measured {
		t.Rows = append(t.Rows, []cell{{Text: e.Name}, verdictCell(e, checkPolicy), verdictCell(e, checkEncryption)})
	}
	s.Blocks = append(s.Blocks, block{Table: t})
	return s
}

func footprintSection(f *Field) section {
	s := section{ID: "footprint", Title: "Footprint"}
	s.Blocks = append(s.Blocks, block{Para: "CPU and memory of the CNI's own pods on the run's two nodes (their cgroups), idle and under a " +
		"cross-node stream, summed over the nodes: CPU in mCPU (thousandths of one core), memory (working set) in MiB. One sampling window each, " +
		"no repeats and no interval: a small difference between two CNIs may be noise. The note of each row is the check's own summary."})
	t := &table{Header: []string{"CNI", "CNI pods", "CPU idle", "CPU under load", "memory idle", "memory under load"},
		Right: []bool{false, true, true, true, true, true}}
	metrics := []string{"cpu_millicores_idle", "cpu_millicores_load", "memory_bytes_idle", "memory_bytes_load"}
	for _, e := range f.Measured {
		row := []cell{{Text: e.Name}}
		fd := finding(e, checkFootprint)
		switch {
		case fd == nil:
			row = append(row, notChecked(e))
		case fd.Verdict != "measured":
			row = append(row, cell{Text: orDash(fd.Verdict), Class: report.VerdictClass(fd.Verdict), Note: fd.Summary})
		default:
			pods := "—"
			if n, ok := fd.Metrics["cni_pods_measured"]; ok {
				pods = fmt.Sprintf("%.0f", n)
				if total, ok := fd.Metrics["cni_pods"]; ok && total != n {
					pods = fmt.Sprintf("%.0f of %.0f", n, total)
				}
			}
			row = append(row, cell{Text: pods, Note: fd.Summary})
		}
		for _, m := range metrics {
			v, ok := 0.0, false
			if fd != nil && fd.Verdict == "measured" {
				v, ok = fd.Metrics[m]
			}
			row = append(row, cell{Text: metricText(m, v, ok)})
		}
		t.Rows = append(t.Rows, row)
	}
	s.Blocks = append(s.Blocks, block{Table: t})
	return s
}

func mtuSection(f *Field) section {
	s := section{ID: "mtu", Title: "MTU"}
	s.Blocks = append(s.Blocks, block{Para: "Whether the pods' MTU fits the node's less the encapsulation the CNI uses (seed 002: a wrong MTU " +
		"fragments or drops full-size packets). Stream cost: how much less one cross-node tcp_stream carried through the pod network than " +
		"between the nodes' host networks in the same run, from the two medians (no interval: the graded summary's tcp_stream cell has one); " +
		"negative when the pod network carried more."})
	t := &table{Header: []string{"CNI", "MTU", "pod MTU", "node MTU", "encapsulation", "stream cost"},
		Right: []bool{false, false, true, true, true, true}}
	for _, e := range f.Measured {
		fd := finding(e, checkMTU)
		if fd == nil {
			t.Rows = append(t.Rows, []cell{{Text: e.Name}, notChecked(e), {Text: "—"}, {Text: "—"}, {Text: "—"}, {Text: "—"}})
			continue
		}
		num := func(k, unit string) cell {
			v, ok := fd.Metrics[k]
			if !ok || math.IsNaN(v) {
				return cell{Text: "—"}
			}
			return cell{Text: strings.TrimSpace(fmt.Sprintf("%.0f %s", v, unit))}
		}
		cost := cell{Text: "—"}
		if v, ok := fd.Metrics["throughput_cost_pct"]; ok && !math.IsNaN(v) {
			cost.Text = fmt.Sprintf("%.1f %%", v)
		}
		t.Rows = append(t.Rows, []cell{{Text: e.Name}, {Text: orDash(fd.Verdict), Class: report.VerdictClass(fd.Verdict), Note: fd.Summary},
			num("pod_mtu", ""), num("node_mtu", ""), num("encap_overhead_bytes", "bytes"), cost})
	}
	s.Blocks = append(s.Blocks, block{Table: t})
	return s
}

func notMeasuredSection(f *Field) section {
	s := section{ID: "not-measured", Title: "Not measured"}
	if len(f.NotMeasured) == 0 {
		s.Blocks = append(s.Blocks, block{Para: "Every CNI named in the input was measured."})
	} else {
		s.Blocks = append(s.Blocks, block{Para: "CNIs named in the input with no runs (a results file whose skipped entries are labelled with them), with the reason recorded:"})
		var list []string
		for _, e := range f.NotMeasured {
			list = append(list, fmt.Sprintf("%s: %s (%s)", e.ID, strings.Join(e.Reasons, "; "), strings.Join(e.Files, ", ")))
		}
		s.Blocks = append(s.Blocks, block{List: list})
	}
	if len(f.SkippedCells) > 0 {
		s.Blocks = append(s.Blocks, block{Para: "Cells the measured runs skipped:"}, block{List: f.SkippedCells})
	}
	return s
}

// metricText formats a footprint figure with its unit, "—" when absent.
func metricText(name string, v float64, ok bool) string {
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	return report.FindingMetric(name, v)
}
