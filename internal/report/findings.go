package report

import (
	"fmt"
	"strings"

	"github.com/cnibench/cnibench/pkg/result"
)

// verdictClass colours a finding's verdict like a grade: what works as
// it should in green, what deserves a look in orange, what is wrong in
// red; verdicts that judge nothing (none, skipped, unknown) stay plain.
func verdictClass(v string) string {
	switch v {
	case "correct", "enforced", "encrypted", "identified", "measured":
		return "g-" + gradeStyles[VeryGood].Key
	case "partial", "inconclusive", "clear":
		return "g-" + gradeStyles[Fair].Key
	case "misconfigured", "not-enforced", "failed":
		return "g-" + gradeStyles[Poor].Key
	}
	return ""
}

// findingsSection shows a backend's checks (a cluster's CNI, MTU,
// NetworkPolicy, encryption on the wire, CNI footprint): a table of
// verdicts, then each check's evidence.
func (m *model) findingsSection() (section, bool) {
	fs := m.set.Findings
	if len(fs) == 0 {
		return section{}, false
	}
	s := section{ID: "findings", Title: "Checks"}
	s.Blocks = append(s.Blocks, block{Para: "Each check ran on the cluster with real connections and counters; its verdict is what was observed, " +
		"not what the CNI claims. A CNI without NetworkPolicy support is reported as not enforcing it: a true finding, not an error."})
	t := &table{Header: []string{"Check", "Verdict", "Finding"}, Records: true}
	for _, f := range fs {
		t.Rows = append(t.Rows, []cell{txt(f.Check), {Text: f.Verdict, Class: verdictClass(f.Verdict)}, txt(f.Summary)})
	}
	s.Blocks = append(s.Blocks, block{Table: t})
	for _, f := range fs {
		var list []string
		list = append(list, f.Evidence...)
		for _, k := range keys(f.Metrics) {
			list = append(list, fmt.Sprintf("%s = %s", k, formatFindingMetric(k, f.Metrics[k])))
		}
		if len(list) == 0 {
			continue
		}
		s.Blocks = append(s.Blocks, block{Para: "Evidence of " + f.Check + ":", Detail: true}, block{List: list, Detail: true})
	}
	return s, true
}

// formatFindingMetric renders a check's metric with its unit.
func formatFindingMetric(name string, v float64) string {
	switch {
	case strings.HasSuffix(name, "_bits_per_sec"):
		return result.Format(result.ThroughputBitsPerSec, v)
	case strings.HasPrefix(name, "memory_bytes"):
		return fmt.Sprintf("%.1f MiB", v/(1<<20))
	case strings.HasSuffix(name, "_pct"):
		return fmt.Sprintf("%.1f %%", v)
	case strings.HasPrefix(name, "cpu_millicores"):
		return fmt.Sprintf("%.1f mCPU", v)
	}
	return fmt.Sprintf("%g", v)
}
