package labsuite

import (
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/scenario/encrypt"
	"github.com/cnibench/cnibench/internal/testutil"
)

// TestSuiteEncryptWireGuard runs `--encrypt wireguard` with tiny windows:
// none and both userspace WireGuard points are measured with their wire
// proof (the marker in clear without encryption, never with it), kernel
// WireGuard is recorded skipped here (or measured where the kernel has
// it), and nothing is left behind.
func TestSuiteEncryptWireGuard(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	o := tinyOptions(t)
	o.Scenario, o.NewScenario = encrypt.ScenarioName, scenarioFlags(t, encrypt.ScenarioName, "--encrypt", "wireguard")
	o.Duration = 150 * time.Millisecond
	set, progress := runScenarioTest(t, o, 3*time.Minute)
	kernelSkipped := len(set.Skipped) == 1 && set.Skipped[0].Labels[encrypt.LabelEncryption] == encrypt.WireGuard &&
		strings.HasPrefix(set.Skipped[0].Reason, "skipped: ")
	want := 3 * 5
	if !kernelSkipped {
		want = 4 * 5
	}
	if len(set.Runs) != want {
		t.Fatalf("%d runs, want %d (skipped %+v)\n%s", len(set.Runs), want, set.Skipped, progress)
	}
	for _, r := range set.Runs {
		l := r.Labels
		if len(r.Repeats) != 1 || r.Repeats[0].Error != "" {
			t.Errorf("%v: repeats %+v", l, r.Repeats)
			continue
		}
		m := r.Repeats[0].Metrics
		marker, enc := m[encrypt.MetricWireMarker], m[encrypt.MetricWireEncFrames]
		switch {
		case l[encrypt.LabelEncryption] == encrypt.None && l["test"] == "tcp_stream" && marker == 0:
			t.Errorf("%v: no marker in clear without encryption", l)
		case l[encrypt.LabelEncryption] != encrypt.None && (marker != 0 || enc == 0):
			t.Errorf("%v: %v marker frames, %v tunnel frames", l, marker, enc)
		}
	}
}
