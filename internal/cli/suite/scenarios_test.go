package suitecmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/cli/clitest"
	"github.com/cnibench/cnibench/internal/cli/streams"
	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/pkg/result"
)

// A scenario's flags without it, or with another scenario, are refused
// with one line naming them and their scenario, exit status 2, before
// anything runs (these run without root; none of them is a valid run).
// The line lists every flag of the scenario ("--mechanisms, --rules and
// --filter-traversal need …"): egress's list is matched by its head and
// tail, so that a further egress flag does not change these cases.
func TestScenarioFlagsRefused(t *testing.T) {
	const egressFlags = "--mechanisms, --rules"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--rules", "10"}, egressFlags + "|need --scenario egress-filter"},
		{[]string{"--filter-traversal", "every-packet"}, egressFlags + "|need --scenario egress-filter"},
		{[]string{"--scenario", "services", "--rules", "10"}, egressFlags + "|are options of --scenario egress-filter, not services"},
		{[]string{"--scenario", "encryption", "--mechanisms", "none"}, egressFlags + "|are options of --scenario egress-filter, not encryption"},
		{[]string{"--scenario", "egress-filter", "--implementations", "iptables"}, "--implementations and --services are options of --scenario services, not egress-filter"},
		{[]string{"--services", "1"}, "--implementations and --services need --scenario services"},
		{[]string{"--lb-modes", "snat-direct"}, "--lb-modes, --lb-cpu and --syn-flood need --scenario l4lb"},
		{[]string{"--scenario", "egress-filter", "--lb-modes", "snat-direct"}, "--lb-modes, --lb-cpu and --syn-flood are options of --scenario l4lb, not egress-filter"},
		{[]string{"--scenario", "l4lb", "--encrypt", "wireguard"}, "--encrypt runs the encryption scenario, not l4lb: drop one of --encrypt and --scenario"},
		{[]string{"--encrypt", "wireguard", "--rules", "10"}, egressFlags + "|are options of --scenario egress-filter, not encryption"},
		{[]string{"--encrypt", "wireguard", "--flows", "1"}, "--flows: a scenario runs its own cells (see docs/scenarios.md); drop --flows or --scenario"},
		{[]string{"--scenario", "egress-filter", "--tests", "tcp_rr"}, "--tests: a scenario runs its own cells (see docs/scenarios.md); drop --tests or --scenario"},
		{[]string{"--scenario", "mesh"}, `--scenario "mesh": must be one of apps, egress-filter, encryption, l4lb, mtu, proxies, services`},
		{[]string{"--scenario", "mesh", "--rules", "10"}, `--scenario "mesh": must be one of apps, egress-filter, encryption, l4lb, mtu, proxies, services`},
		// The scenarios' own values, checked by their builders.
		{[]string{"--scenario", "egress-filter", "--mechanisms", "pf"}, `--mechanisms: unknown egress mechanism "pf"`},
		{[]string{"--scenario", "egress-filter", "--rules", "10,,100"}, `--rules "10,,100": empty element; separate values with single commas, e.g. --rules a,b`},
		{[]string{"--scenario", "egress-filter", "--rules", "x"}, `--rules x: "x" is not a whole number`},
		{[]string{"--scenario", "egress-filter", "--rules", "0"}, "--rules 0: must be at least 1"},
		{[]string{"--scenario", "egress-filter", "--filter-traversal", "x"}, `--filter-traversal "x": must be one of every-packet, new-connection`},
		{[]string{"--scenario", "services", "--services", "0"}, "--services 0: must be between 1 and 16000"},
		{[]string{"--scenario", "services", "--implementations", "ipvs"}, `--implementations "ipvs": must be among none, iptables, ebpf-socket-lb, ebpf-tc-lb`},
		{[]string{"--scenario", "l4lb", "--lb-modes", "bogus"}, `--lb-modes "bogus": l4lb mode "bogus"`},
		{[]string{"--encrypt", "foo"}, `--encrypt "foo": must be among none, wireguard, ipsec`},
		{[]string{"--encrypt", ","}, `--encrypt ",": empty element`},
		{[]string{"--backend", "kubernetes", "--rules", "10"}, egressFlags + "|need --scenario egress-filter"},
		{[]string{"--backend", "kubernetes", "--scenario", "services", "--implementations", "ipvs"}, `--implementations "ipvs": must be among`},
	} {
		_, stderr, code := clitest.Execute(t, NewCommand, append(tc.args, "--out", t.TempDir())...)
		head, tail, _ := strings.Cut(tc.want, "|") // head…tail, or a prefix
		ok := strings.HasPrefix(stderr, "cnibench: "+head) && strings.HasSuffix(stderr, tail+"\n")
		if code != 2 || !ok || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line starting with %q, ending with %q", tc.args, code, stderr, head, tail)
		}
	}
}

// The scenarios' flags keep their names, defaults and help texts (they
// moved into the scenarios' packages).
func TestScenarioFlagsHelp(t *testing.T) {
	cmd, _ := newCommand(nil, streams.IOStreams{})
	for name, prefix := range map[string]string{
		"scenario":         "run a scenario instead of the matrix: apps, egress-filter, encryption, l4lb, mtu, proxies, services (see docs/scenarios.md)",
		"mechanisms":       "egress-filter: comma-separated filter mechanisms (default: all: ",
		"rules":            "egress-filter: comma-separated deny-set sizes (default: 10,1000 with the quick profile, 10,100,1000,10000,100000,1000000 with standard)",
		"filter-traversal": "egress-filter: every-packet and/or new-connection (a leading 'ct state established accept'); default every-packet",
		"implementations":  "services: comma-separated service implementations (default: all: none,iptables,ebpf-socket-lb,ebpf-tc-lb)",
		"services":         "services: comma-separated service counts (default: 1,1000 with the quick profile, 1,100,1000,10000 with standard)",
		"encrypt":          "run the encryption scenario: comma-separated families none, wireguard, ipsec (each with its kernel and userspace implementations; none always runs as the baseline and negative control)",
		"lb-modes":         "l4lb: comma-separated modes LB-TRANSPORT[-fw], LB snat, dsr or kubeproxy, TRANSPORT direct or vxlan, e.g. snat-vxlan,dsr-direct-fw,kubeproxy-vxlan (default: all twelve, and ipv6, recorded skipped)",
	} {
		fl := cmd.Flags().Lookup(name)
		if fl == nil {
			t.Errorf("no --%s", name)
			continue
		}
		if fl.Value.Type() != "string" || fl.DefValue != "" || !strings.HasPrefix(fl.Usage, prefix) {
			t.Errorf("--%s: %s default %q, usage %q; want a string without default, usage %q", name, fl.Value.Type(), fl.DefValue, fl.Usage, prefix)
		}
	}
}

// The profile decides a scenario's default sizes; its flags are read by
// its own builder.
func TestScenarioFromFlags(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		name   string
		config map[string]string
	}{
		{[]string{"--scenario", "egress-filter", "--mechanisms", "none,ipset", "--seed", "9"}, "egress-filter",
			map[string]string{"mechanisms": "none,ipset", "rules": "10,1000", "filter_traversal": "every-packet", "filter_seed": "9"}},
		{[]string{"--scenario", "egress-filter", "--profile", "standard", "--mechanisms", "none", "--filter-traversal", "every-packet,new-connection"}, "egress-filter",
			map[string]string{"rules": "10,100,1000,10000,100000,1000000", "filter_traversal": "every-packet,new-connection"}},
		{[]string{"--scenario", "egress-filter", "--rules", "5"}, "egress-filter", map[string]string{"rules": "5"}},
		{[]string{"--scenario", "services"}, "services", map[string]string{"services": "1,1000", "implementations": "none,iptables,ebpf-socket-lb,ebpf-tc-lb"}},
		{[]string{"--scenario", "services", "--profile", "standard", "--implementations", "iptables"}, "services", map[string]string{"services": "1,100,1000,10000", "implementations": "iptables"}},
		{[]string{"--encrypt", "wireguard"}, "encryption", nil},
		{[]string{"--scenario", "l4lb", "--lb-modes", "snat-vxlan"}, "l4lb", map[string]string{"lb_modes": "snat-vxlan"}},
		{nil, "", nil},
	} {
		cmd, f := newCommand(nil, streams.IOStreams{})
		if err := cmd.ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		o, err := f.options(cmd)
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if o.Scenario != tc.name || (o.NewScenario == nil) != (tc.name == "") {
			t.Errorf("%v: scenario %q (builder %v), want %q", tc.args, o.Scenario, o.NewScenario != nil, tc.name)
			continue
		}
		if tc.name == "" {
			continue
		}
		sc, err := o.NewScenario(scenario.Common{Profile: o.Profile, Seed: o.Seed})
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		cfg := sc.(scenario.Configer).Config()
		for k, v := range tc.config {
			if cfg[k] != v {
				t.Errorf("%v: config %s = %q, want %q", tc.args, k, cfg[k], v)
			}
		}
	}
}

// Every scenario linked into cnibench is drawn from the shape it writes
// into its results exactly as the report drew it from its own tables
// before results carried a shape (the legacy fallback): the shapes moved
// into the scenarios verbatim. The runs are synthetic, one per point and
// cell of the scenario's default build (egress-filter with both
// traversals, so that its variant label is drawn), skipped points included.
func TestScenarioShapesDrawAsBefore(t *testing.T) {
	args := map[string][]string{"egress-filter": {"--filter-traversal", "every-packet,new-connection", "--mechanisms", "none,ipset,iptables,ebpf-lpm"}}
	// The scenarios whose report the legacy code drew before results
	// carried a shape; newer ones (apps, proxies) were born with theirs.
	// l4lb's shape grew after the move (the kube-proxy mode, the LB CPU
	// split and the SYN flood are groups of their own); its legacy shape
	// still draws the files written before.
	names := []string{"egress-filter", "encryption", "services"}
	if all := scenario.Names(); !slices.Equal(all, []string{"apps", "egress-filter", "encryption", "l4lb", "mtu", "proxies", "services"}) {
		t.Fatalf("registered scenarios %v", all)
	}
	for _, name := range names {
		reg, err := scenario.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		build, err := reg.Parse(args[name]...)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := build(scenario.Common{Profile: "quick", Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		shaper, ok := sc.(scenario.Shaper)
		if !ok {
			t.Errorf("%s has no report shape", name)
			continue
		}
		shape := shaper.Shape()
		if why := shape.Valid(); why != "" || shape.Scenario != name {
			t.Errorf("%s: shape for %q: %s", name, shape.Scenario, why)
			continue
		}
		set := syntheticSet(sc, shape)
		legacy := render(t, set)
		set.Shape = &shape
		if got := render(t, set); got != legacy {
			t.Errorf("%s: drawn from its shape, the report differs from before:\n%s", name, firstDiff(legacy, got))
		}
		if !strings.Contains(legacy, "## Scenario "+name) {
			t.Errorf("%s: no section of its own", name)
		}
	}
}

// A scenario older than shapes registers the shape its documents written
// without one are drawn with (l4lb's differs from what it writes today:
// those documents had two groups); each draws them in a section of its
// own.
func TestLegacyShapesDraw(t *testing.T) {
	var legacy []string
	for _, name := range scenario.Names() {
		sh, ok := result.LegacyShape(name)
		if !ok {
			continue
		}
		legacy = append(legacy, name)
		reg, err := scenario.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		build, err := reg.Parse()
		if err != nil {
			t.Fatal(err)
		}
		sc, err := build(scenario.Common{Profile: "quick", Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		got := render(t, syntheticSet(sc, sh))
		// The tables' head: the sweep's series, the categorical groups
		// and series.
		var head string
		if c := sh.Categorical; c != nil {
			head = "| " + strings.Join(append(slices.Clone(c.GroupHeaders), c.SeriesHeader), " | ") + " |"
		} else {
			head = "| " + sh.Sweep.SeriesHeader + " |"
		}
		if !strings.Contains(got, "## Scenario "+name) || !strings.Contains(got, head) {
			t.Errorf("%s: no section of its own drawn with its legacy shape (%q)", name, head)
		}
	}
	if !slices.Equal(legacy, []string{"egress-filter", "encryption", "l4lb", "services"}) {
		t.Errorf("legacy shapes of %v", legacy)
	}
}

// The report's tests draw egress-filter documents without a shape with
// the scenario's legacy shape as a document would carry it (they link no
// scenario): it is the one the scenario registers.
func TestReportTestsEgressShape(t *testing.T) {
	b, err := os.ReadFile("../../report/testdata/shape-egress-filter.json")
	if err != nil {
		t.Fatal(err)
	}
	var got result.ScenarioShape
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want, ok := result.LegacyShape("egress-filter")
	if !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("internal/report/testdata/shape-egress-filter.json is not egress-filter's legacy shape:\n%+v\n%+v", got, want)
	}
}

// syntheticSet has one run per point and cell of sc, with every metric the
// shape draws.
func syntheticSet(sc scenario.Scenario, shape result.ScenarioShape) *result.Set {
	t0 := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	set := &result.Set{Schema: result.SchemaResults, Start: t0, End: t0.Add(time.Hour), Config: map[string]string{"scenario": sc.Name()}}
	for i, p := range sc.Points() {
		for _, c := range scenario.CellsOf(sc, p) {
			l := maps.Clone(p.Labels)
			maps.Copy(l, c.Labels)
			path := c.Path
			if path == "" {
				path = "cross-node"
			}
			maps.Copy(l, map[string]string{"datapath": "veth-routing", "path": path, "test": c.Test, "flows": strconv.Itoa(max(c.Flows, 1)), "mtu": "1500"})
			metrics := []string{result.ThroughputBitsPerSec, result.DatagramsReceivedPerSec, result.CPUPctPer100Gbit, result.TransPerSec,
				result.LatencyUsP50, result.LatencyUsP99, result.HostCPUPct, result.Errors}
			if shape.Sweep != nil {
				metrics = append(metrics, shape.Sweep.PointMetrics...)
			}
			if shape.Categorical != nil {
				metrics = append(metrics, shape.Categorical.Metrics[c.Test]...)
			}
			run := result.Run{Labels: l}
			for r := range 5 {
				m := map[string]float64{}
				for j, name := range metrics {
					m[name] = float64((i+1)*100+j*7) * (1 + 0.01*float64(r-2))
				}
				run.Repeats = append(run.Repeats, result.Repeat{Index: r, Start: t0.Add(time.Duration(r) * time.Minute), DurationSec: 1, Metrics: m})
			}
			run.Summary = result.SummarizeRepeats(run.Repeats)
			if p.Skip != nil {
				set.Skipped = append(set.Skipped, result.Skip{Labels: l, Reason: p.SkipReason()})
				continue
			}
			set.Runs = append(set.Runs, run)
		}
	}
	return set
}

func render(t *testing.T, set *result.Set) string {
	t.Helper()
	var md, txt, html bytes.Buffer
	if err := report.Markdown(&md, set); err != nil {
		t.Fatal(err)
	}
	if err := report.Text(&txt, set, false); err != nil {
		t.Fatal(err)
	}
	if err := report.HTML(&html, set); err != nil {
		t.Fatal(err)
	}
	return md.String() + "\n----\n" + txt.String() + "\n----\n" + html.String()
}

func firstDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return fmt.Sprintf("line %d:\n- %s\n+ %s", i+1, la[i], lb[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d lines", len(la), len(lb))
}
