package compare

import (
	"strings"
	"testing"

	"github.com/cnibench/cnibench/pkg/result"
)

// Cells that differ beyond their labels are compared and shown with both
// values, and the gate gives them no verdict; so are cells not trusted.
func TestConfigMismatch(t *testing.T) {
	l := func(dp string) map[string]string {
		return map[string]string{"test": "tcp_rr", "flows": "1", "path": "cross-node", "datapath": dp}
	}
	old := []float64{100, 101, 99, 100.5, 99.5, 100.2}
	slow := []float64{80, 81, 79, 80.5, 79.5, 80.2}
	mk := func(dp, duration string, vals []float64) result.Run {
		r := run(l(dp), result.TransPerSec, vals...)
		r.Config = map[string]string{"duration": duration, "flows": "1", "message_size": "1"}
		return r
	}
	a := set(mk("a", "200ms", old), mk("b", "200ms", old), mk("c", "200ms", old))
	b := set(mk("a", "2s", slow), mk("b", "200ms", slow), mk("c", "200ms", slow))
	b.Runs[2].NotTrusted = "not trusted: the host was busy (median 90 % of a core used by other programs)"
	a.Host.Kernel, b.Host.Kernel = "6.18.0", "6.18.0"
	r, err := Compare([]Input{{"old.json", a}, {"new.json", b}}, Options{Metrics: []string{result.TransPerSec}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.ConfigNotes) != 1 || !strings.Contains(r.ConfigNotes[0], "not the same measurement in 1 cell(s)") ||
		!strings.Contains(r.ConfigNotes[0], "duration 200ms vs 2s") {
		t.Errorf("config notes %q", r.ConfigNotes)
	}
	rs, err := ParseRules([]string{"worse>5%"})
	if err != nil {
		t.Fatal(err)
	}
	g, err := r.Gate(GateOptions{Rules: rs})
	if err != nil {
		t.Fatal(err)
	}
	// b is a regression; a differs in duration, c is not trusted: neither
	// is judged.
	if len(g.Failures) != 1 || g.Failures[0].Labels["datapath"] != "b" {
		t.Errorf("failures %+v", g.Failures)
	}
	why := map[string]string{}
	for _, v := range g.Unjudged {
		why[v.Labels["datapath"]] = v.Why
	}
	if !strings.Contains(why["a"], "not the same measurement: duration 200ms vs 2s") || !strings.Contains(why["c"], "not trusted: the host was busy") {
		t.Errorf("unjudged %q", why)
	}

	// A file-wide difference (kernel, version) is said once.
	b.Host.Kernel, b.Tool.Version = "6.19.0", "v9"
	a.Tool.Version = "v8"
	b.Runs[0].Config["duration"] = "200ms"
	r, err = Compare([]Input{{"old.json", a}, {"new.json", b}}, Options{Metrics: []string{result.TransPerSec}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.ConfigNotes) != 1 || !strings.Contains(r.ConfigNotes[0], "in 3 cell(s) (kernel 6.18.0 vs 6.19.0, cnibench version v8 vs v9).") {
		t.Errorf("config notes %q", r.ConfigNotes)
	}
}
