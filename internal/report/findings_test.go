package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/pkg/result"
)

// A cluster run's checks: a table of verdicts coloured like grades, then
// each check's evidence and metrics with units; none without findings.
func TestFindingsSection(t *testing.T) {
	set := &result.Set{Schema: result.SchemaResults, Config: map[string]string{"backend": "kubernetes", "cluster": "c1"},
		Findings: []result.Finding{
			{Check: "network_policy", Verdict: "not-enforced", Summary: "NetworkPolicy is not enforced",
				Evidence: []string{"ingress deny: cli-a → srv-b: expected refused, still connected 2 of 2 after 10s"}},
			{Check: "cni_footprint", Verdict: "measured", Summary: "the CNI's pods use …",
				Metrics: map[string]float64{"cpu_millicores_load": 765.2, "memory_bytes_idle": 9 << 20}},
		}}
	var md bytes.Buffer
	if err := Markdown(&md, set); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Checks", "not-enforced", "expected refused, still connected", "765.2 mCPU",
		"9.0 MiB", "Kubernetes cluster c1"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	var html bytes.Buffer
	if err := HTML(&html, set); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html.String(), verdictClass("not-enforced")) || !strings.Contains(html.String(), verdictClass("measured")) {
		t.Error("HTML verdicts are not coloured")
	}
	if _, ok := newModel(&result.Set{}).findingsSection(); ok {
		t.Error("a set without findings has a Checks section")
	}
	for v, want := range map[string]string{"enforced": "g-verygood", "clear": "g-fair", "misconfigured": "g-poor", "none": "", "skipped": ""} {
		if got := verdictClass(v); got != want {
			t.Errorf("verdictClass(%s) = %q, want %q", v, got, want)
		}
	}
}
