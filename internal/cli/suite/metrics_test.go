package suitecmd

import (
	"os"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/pkg/result"
)

// docs/results.md documents every metric cnibench defines: the engine's
// and the backends' (result.Metrics) and those of the scenarios linked
// here (scenarios.go), which register their own with their registration.
// The test lives here because this is where every scenario is linked.
func TestMetricsDocumented(t *testing.T) {
	b, err := os.ReadFile("../../../docs/results.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	owners := map[string]int{}
	for _, m := range result.Definitions() {
		owners[m.Owner]++
		if !strings.Contains(doc, "`"+m.Name+"`") {
			t.Errorf("docs/results.md does not document %s (defined by %s)", m.Name, ownerName(m.Owner))
		}
		if m.Unit == "" || m.Help == "" {
			t.Errorf("metric %s has no unit or help", m.Name)
		}
	}
	// The scenarios' metrics are among them.
	for _, scen := range []string{"egress-filter", "encryption", "l4lb", "services"} {
		if owners[scen] == 0 {
			t.Errorf("scenario %s registered no metric", scen)
		}
	}
	if owners[""] != len(result.Metrics) {
		t.Errorf("%d of the engine's metrics listed, want %d", owners[""], len(result.Metrics))
	}
}

func ownerName(owner string) string {
	if owner == "" {
		return "the engine"
	}
	return "scenario " + owner
}
