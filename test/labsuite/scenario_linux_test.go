package labsuite

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"

	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/internal/scenario/egress"
	"github.com/cnibench/cnibench/internal/scenario/egress/filter"
	"github.com/cnibench/cnibench/internal/suite"
	"github.com/cnibench/cnibench/internal/testutil"
	"github.com/cnibench/cnibench/pkg/result"
)

// scenarioFlags is a registered scenario's builder from its flags, as
// `cnibench suite --scenario NAME ARGS…` would parse them.
func scenarioFlags(t *testing.T, name string, args ...string) scenario.Builder {
	t.Helper()
	reg, err := scenario.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	b, err := reg.Parse(args...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// runScenarioTest runs a scenario with options o (one repeat), checks
// that nothing is left behind — lab namespaces, this process's BPF
// objects, the host's nft tables — and returns the results and the
// progress output.
func runScenarioTest(t *testing.T, o Options, timeout time.Duration) (*result.Set, string) {
	t.Helper()
	before := labNamespaces(t)
	fdsBefore := ownBPFFDs(t)
	tablesBefore := hostTables(t)
	o.Repeat = 1
	if o.Warmup == 0 {
		o.Warmup = 50 * time.Millisecond
	}
	var progress strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := o.run(ctx, &progress)
	if err != nil {
		t.Fatalf("suite: %v\n%s", err, progress.String())
	}
	assertNothingLeft(t, before)
	if n := ownBPFFDs(t); n != fdsBefore {
		t.Errorf("%d BPF objects (programs, links, maps) held open before the run, %d after (a link or map leaked)", fdsBefore, n)
	}
	if after := hostTables(t); !slices.Equal(after, tablesBefore) {
		t.Errorf("host nft tables changed: %v → %v", tablesBefore, after)
	}
	data, err := os.ReadFile(out.ResultsPath)
	if err != nil {
		t.Fatal(err)
	}
	set, err := result.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	return set, progress.String()
}

// ownBPFFDs counts this process's file descriptors of BPF objects
// (programs, links, maps): what a scenario leaks keeps one open. Other
// test packages running at the same time load programs of their own, so
// the machine-wide program list cannot tell a leak from them.
func ownBPFFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(target, "anon_inode:bpf-") {
			n++
		}
	}
	return n
}

// hostTables lists the host namespace's nftables tables (read only).
func hostTables(t *testing.T) []string {
	t.Helper()
	c, err := nftables.New()
	if err != nil {
		t.Fatal(err)
	}
	tabs, err := c.ListTables()
	if err != nil {
		t.Fatalf("list host nft tables: %v", err)
	}
	var out []string
	for _, tb := range tabs {
		out = append(out, tb.Name)
	}
	slices.Sort(out)
	return out
}

// TestSuiteEgressScenario runs the egress-filter scenario with the
// baseline, ipset and ebpf-lpm at 10 and 1000 rules and tiny windows.
func TestSuiteEgressScenario(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	testutil.NeedProgram(t, "ipset", "iptables-nft-restore")
	o := tinyOptions(t)
	o.Scenario, o.NewScenario = egress.ScenarioName, scenarioFlags(t, egress.ScenarioName, "--mechanisms", "none,ipset,ebpf-lpm", "--rules", "10,1000")
	o.Duration = 100 * time.Millisecond
	set, progress := runScenarioTest(t, o, 2*time.Minute)
	if len(set.Skipped) != 0 {
		t.Errorf("skipped: %+v", set.Skipped)
	}
	// 3 mechanisms × 2 rule counts × 6 cells (tcp_rr, icmp_echo,
	// tcp_stream, udp_stream, udp_stream at a fixed rate, udp_stream with
	// iperf3's handshake).
	if want := 3 * 2 * 6; len(set.Runs) != want {
		t.Fatalf("%d runs, want %d\n%s", len(set.Runs), want, progress)
	}
	proven := []string{filter.SetupSeconds, filter.SetupReturnedSeconds, filter.SetupResolutionSeconds,
		filter.UpdateAddSeconds, filter.UpdateRemoveSeconds, filter.LoaderRSSBytes, filter.TeardownSeconds}
	for _, r := range set.Runs {
		l := r.Labels
		if l["scenario"] != egress.ScenarioName || l["datapath"] != lab.ScenarioDatapath || l["path"] != "cross-node" ||
			l["traversal"] != "every-packet" || l["mechanism"] == "" || l["rules"] == "" {
			t.Errorf("labels %v", l)
			continue
		}
		if len(r.Repeats) != 1 || r.Repeats[0].Error != "" {
			t.Errorf("%v: repeats %+v", l, r.Repeats)
			continue
		}
		m := r.Repeats[0].Metrics
		want := proven
		if l["mechanism"] == "none" {
			want = []string{filter.SetupReturnedSeconds, filter.TeardownSeconds}
		} else {
			want = append(slices.Clone(want), filter.KernelBytes)
			// A proven deny: the filter took effect after loading started
			// and before the proof's end.
			if s := m[filter.SetupSeconds]; s <= -0.01 || s > 60 || m[filter.SetupResolutionSeconds] <= 0 {
				t.Errorf("%v: set-up %v s, resolution %v s", l, s, m[filter.SetupResolutionSeconds])
			}
			if r.Config["filter_denied_addr"] == "" || r.Config["filter_load_method"] == "" {
				t.Errorf("%v: config %v", l, r.Config)
			}
		}
		for _, k := range want {
			if _, ok := m[k]; !ok {
				t.Errorf("%v: no %s", l, k)
			}
		}
		if l["test"] == "udp_stream" && m[result.DatagramsReceivedPerSec] <= 0 {
			t.Errorf("%v: no packet rate", l)
		}
	}
	if !strings.Contains(progress, "ebpf-lpm") || !strings.Contains(progress, "prepared in") {
		t.Errorf("progress:\n%s", progress)
	}
}

// A datapath without the client's node is refused with one line naming
// --datapaths.
func TestSuiteEgressScenarioNeedsRoutedDatapath(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	before := labNamespaces(t)
	o := tinyOptions(t, "bridge")
	o.Scenario, o.NewScenario = egress.ScenarioName, scenarioFlags(t, egress.ScenarioName, "--mechanisms", "none", "--rules", "10")
	_, err := o.run(context.Background(), nil)
	var ve *suite.ValidationError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "--datapaths bridge") || strings.Contains(err.Error(), "\n") {
		t.Errorf("error %v, want a one-line validation error naming --datapaths bridge", err)
	}
	assertNothingLeft(t, before)
}
