package field

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/report/reporttest"
	"github.com/cnibench/cnibench/pkg/result"
)

// sweepField is a small synthetic field of sweeps: two CNIs' egress-filter
// sweeps (two mechanisms each, N = 10, 100, 1000; cilium's NetworkPolicy
// failed at 1000; calico's baseline datapath skipped) and a third
// configuration's services sweep (too large at 10 000).
func sweepField(t *testing.T) *Field {
	t.Helper()
	xs := []int{10, 100, 1000}
	calico := reporttest.SweepSet(reporttest.SweepOptions{
		Shape: reporttest.EgressShape, CNI: "calico", Mode: "vxlan", Version: "v3.29.1",
		Series: []string{"calico-gnp", "networkpolicy"}, Xs: xs,
		Cost:   map[string]float64{"calico-gnp": 0.05, "networkpolicy": 0.1},
		Labels: map[string]string{"kube_proxy_mode": "iptables"}, Seed: 1,
	})
	cilium := reporttest.SweepSet(reporttest.SweepOptions{
		Shape: reporttest.EgressShape, CNI: "cilium", Mode: "native", Version: "v1.16.4",
		Series: []string{"cilium-policy", "networkpolicy"}, Xs: xs,
		Cost:   map[string]float64{"cilium-policy": 0.02, "networkpolicy": 0.02},
		Failed: map[string]string{"networkpolicy/1000": "prepare failed: not enforced: the allowed server was cut for the whole 1m0s wait"},
		Labels: map[string]string{"kube_proxy_mode": "replaced"}, Seed: 2,
	})
	services := reporttest.SweepSet(reporttest.SweepOptions{
		Shape: reporttest.ServicesShape, CNI: "calico", Mode: "ebpf", Version: "v3.29.1",
		Series: []string{"none", "calico-ebpf"}, Xs: []int{1, 100, 1000, 10000},
		Cost:    map[string]float64{"calico-ebpf": 0.01},
		Skipped: map[string]string{"calico-ebpf/10000": "too large: the cluster holds at most 5000 services (--cluster-scale)"},
		Seed:    3,
	})
	// As on a real cluster: the host network's baseline takes no part.
	calico.Skipped = append(calico.Skipped, result.Skip{Labels: map[string]string{"scenario": "egress-filter", "datapath": "baseline",
		"mechanism": "networkpolicy", "rules": "10", "cni": "calico", "cni_mode": "vxlan", "cni_version": "v3.29.1"},
		Reason: "skipped: egress-filter: not supported: baseline is the host network, which has no pods for a scenario's policies or services"})
	// cilium first: the lines follow the files' order, not the names'.
	f, err := New([]Input{{Name: "cilium-native/results.json", Set: cilium}, {Name: "calico-vxlan/results.json", Set: calico},
		{Name: "calico-ebpf/results.json", Set: services}})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestSweepGolden(t *testing.T) {
	f := sweepField(t)
	for _, tc := range []struct {
		file   string
		render func(*bytes.Buffer) error
	}{
		{"testdata/field-sweep.md.golden", func(b *bytes.Buffer) error { return Markdown(b, f) }},
		{"testdata/field-sweep.txt.golden", func(b *bytes.Buffer) error { return Text(b, f, false) }},
	} {
		var b bytes.Buffer
		if err := tc.render(&b); err != nil {
			t.Fatal(err)
		}
		checkGolden(t, tc.file, b.Bytes())
	}
}

// The HTML draws one chart per metric of each sweep, each with a line per
// CNI and mechanism in a colour of its own, and marks the failed point.
func TestSweepCharts(t *testing.T) {
	var b bytes.Buffer
	if err := HTML(&b, sweepField(t)); err != nil {
		t.Fatal(err)
	}
	h := b.String()
	egress := regexp.MustCompile(`<svg[^>]*class="chart chart-scenario"[^>]*id="scenario-egress-filter-[^"]*"`).FindAllString(h, -1)
	services := regexp.MustCompile(`<svg[^>]*class="chart chart-scenario"[^>]*id="scenario-services-[^"]*"`).FindAllString(h, -1)
	// set-up, then tcp_rr's rate, p50, p99 and host CPU
	if len(egress) != 5 || len(services) != 5 {
		t.Errorf("%d egress-filter and %d services charts, want 5 each", len(egress), len(services))
	}
	for _, want := range []string{
		`id="scenario-egress-filter"`, `id="scenario-services"`,
		"calico vxlan: calico-gnp", "calico vxlan: networkpolicy", "cilium: cilium-policy", "cilium: networkpolicy",
		"× not measured: cilium: networkpolicy 1k: failed", "× not measured: calico ebpf: calico-ebpf 10k: too large",
	} {
		if !strings.Contains(h, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	// The failed and the too-large points are crosses at their N, their
	// reasons the tooltips.
	for _, want := range []string{
		`×<title>cilium: networkpolicy: 1k rules: failed: prepare failed: not enforced: the allowed server was cut for the whole 1m0s wait</title>`,
		`×<title>calico ebpf: calico-ebpf: 10k services: too large: the cluster holds at most 5000 services (--cluster-scale)</title>`,
	} {
		if n := strings.Count(h, want); n != 5 {
			t.Errorf("%d charts mark %q, want 5", n, want)
		}
	}
	for _, bad := range []string{"NaN", "Inf", `data-points="0"`} {
		if strings.Contains(h, bad) {
			t.Errorf("HTML contains %q", bad)
		}
	}
	// The first egress-filter chart's four lines have four colours.
	sec := h[strings.Index(h, `id="scenario-egress-filter-point`):]
	sec = sec[:strings.Index(sec, "</svg>")]
	colors := map[string]bool{}
	for _, m := range regexp.MustCompile(`class="line"[^>]*stroke="(#[0-9A-Fa-f]+)"`).FindAllStringSubmatch(sec, -1) {
		colors[m[1]] = true
	}
	if len(colors) != 4 {
		t.Errorf("the set-up chart's lines have %d colours, want 4 (one per CNI and mechanism)", len(colors))
	}
}

// A scenario drawn otherwise (no sweep shape) is named, not dropped.
func TestNonSweepScenarioNamed(t *testing.T) {
	f := sweepField(t)
	for _, e := range f.Measured {
		if e.Name != "cilium" {
			continue
		}
		run := e.Set.Runs[0]
		l := map[string]string{}
		for k, v := range run.Labels {
			l[k] = v
		}
		l["scenario"], l["lb_mode"] = "l4lb", "snat"
		delete(l, "mechanism")
		e.Set.Runs = append(e.Set.Runs, result.Run{Labels: l, Repeats: run.Repeats, Summary: run.Summary})
	}
	var b bytes.Buffer
	if err := Markdown(&b, f); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "also measured the scenarios l4lb") {
		t.Errorf("the l4lb runs are not named:\n%s", b.String())
	}
}
