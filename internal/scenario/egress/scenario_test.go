package egress

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/internal/scenario/egress/filter"
	"github.com/cnibench/cnibench/internal/scenario/egress/incluster"
)

// fakeMech is a mechanism for the point tests: only Name, Probe and
// MaxRules are used.
type fakeMech struct {
	name  string
	probe error
	max   int
}

func (m fakeMech) Name() string  { return m.name }
func (m fakeMech) Probe() error  { return m.probe }
func (m fakeMech) MaxRules() int { return m.max }
func (m fakeMech) Load(context.Context, filter.Target, []netip.Prefix, filter.Options) (filter.Filter, filter.LoadInfo, error) {
	return nil, filter.LoadInfo{}, errors.New("fake")
}

func fakeLookup(name string) (filter.Mechanism, error) {
	switch name {
	case "none":
		return fakeMech{name: name, max: 10_000_000}, nil
	case "iptables":
		return fakeMech{name: name, max: 1000}, nil
	case "ebpf-lpm":
		return fakeMech{name: name, max: 10_000_000}, nil
	case "broken":
		return fakeMech{name: name, max: 100, probe: fmt.Errorf("%w: ipset program missing", filter.ErrNotSupported)}, nil
	}
	return nil, fmt.Errorf("unknown egress mechanism %q", name)
}

func TestScenarioPoints(t *testing.T) {
	tests := []struct {
		name string
		o    ScenarioOptions
		want []string // "mechanism/rules/traversal: reason"
	}{
		{
			name: "too large and traversal",
			o:    ScenarioOptions{Mechanisms: []string{"iptables"}, Rules: []int{10, 100000}, Traversals: filter.Traversals},
			want: []string{
				"iptables/10/every-packet: ", "iptables/10/new-connection: ",
				"iptables/100000/every-packet: too large: iptables holds at most 1000 rules, asked for 100000",
				"iptables/100000/new-connection: too large: iptables holds at most 1000 rules, asked for 100000",
			},
		},
		{
			name: "probe failure skips every point",
			o:    ScenarioOptions{Mechanisms: []string{"broken"}, Rules: []int{10, 1000}},
			want: []string{
				"broken/10/every-packet: skipped: not supported: ipset program missing",
				"broken/1000/every-packet: skipped: not supported: ipset program missing",
			},
		},
		{
			name: "mechanisms without conntrack run every-packet once",
			o:    ScenarioOptions{Mechanisms: []string{"none", "ebpf-lpm"}, Rules: []int{10}, Traversals: filter.Traversals},
			want: []string{"none/10/every-packet: ", "ebpf-lpm/10/every-packet: "},
		},
		{
			name: "new-connection only",
			o:    ScenarioOptions{Mechanisms: []string{"none", "iptables"}, Rules: []int{10}, Traversals: []string{filter.TraversalNewConnection}},
			want: []string{"none/10/every-packet: ", "iptables/10/new-connection: "},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := newScenario(tt.o, fakeLookup)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range s.Points() {
				if p.Labels[scenario.LabelScenario] != ScenarioName {
					t.Errorf("point %v has no scenario label", p.Labels)
				}
				mech, n, tr, err := pointParams(p)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, fmt.Sprintf("%s/%d/%s: %s", mech, n, tr, p.SkipReason()))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("points:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestNewScenarioValidation(t *testing.T) {
	tests := []struct {
		o    ScenarioOptions
		want string // error substring, "" for none
	}{
		{ScenarioOptions{Mechanisms: []string{"none"}}, ""},
		{ScenarioOptions{Mechanisms: []string{"nope"}}, "--mechanisms: unknown egress mechanism"},
		{ScenarioOptions{Mechanisms: []string{"none", "none"}}, `--mechanisms: "none" given twice`},
		{ScenarioOptions{Mechanisms: []string{"none"}, Rules: []int{0}}, "--rules 0"},
		{ScenarioOptions{Mechanisms: []string{"none"}, Traversals: []string{"sometimes"}}, `--filter-traversal "sometimes"`},
	}
	for _, tt := range tests {
		_, err := newScenario(tt.o, fakeLookup)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%+v: %v", tt.o, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%+v: error %v, want one containing %q", tt.o, err, tt.want)
		}
	}
	s, err := newScenario(ScenarioOptions{Mechanisms: []string{"none"}}, fakeLookup)
	if err != nil {
		t.Fatal(err)
	}
	if o := s.Options(); !slices.Equal(o.Rules, DefaultRules) || !slices.Equal(o.Traversals, []string{filter.TraversalEveryPacket}) {
		t.Errorf("defaults: %+v", o)
	}
}

// The update address is outside every generated set; the denied one inside.
func TestProbeAddressesAgainstGenerate(t *testing.T) {
	for _, n := range []int{1, 10, 1000, 100000} {
		cidrs, err := filter.Generate(7, n, filter.DeniedAddr)
		if err != nil {
			t.Fatal(err)
		}
		in := false
		for _, c := range cidrs {
			if c.Contains(UpdateAddr) {
				t.Errorf("n=%d: %s covers the update address", n, c)
			}
			in = in || c.Contains(filter.DeniedAddr)
		}
		if !in {
			t.Errorf("n=%d: no CIDR covers the denied address", n)
		}
	}
}

func TestSkipReason(t *testing.T) {
	tests := []struct {
		skip error
		want string
	}{
		{nil, ""},
		{errors.New("no ipset"), "skipped: no ipset"},
		{fmt.Errorf("%w: x holds at most 1", scenario.ErrTooLarge), "too large: x holds at most 1"},
	}
	for _, tt := range tests {
		if got := (scenario.Point{Skip: tt.skip}).SkipReason(); got != tt.want {
			t.Errorf("SkipReason(%v) = %q, want %q", tt.skip, got, tt.want)
		}
	}
}

func TestProbeWarmup(t *testing.T) {
	for _, tc := range []struct {
		rules int
		want  time.Duration
	}{{10, 2 * time.Second}, {100_000, 2 * time.Second}, {1_000_000, 20 * time.Second}, {10_000_000, 200 * time.Second}} {
		if got := probeWarmup(tc.rules); got != tc.want {
			t.Errorf("probeWarmup(%d) = %v, want %v", tc.rules, got, tc.want)
		}
	}
}

func TestCheckMemory(t *testing.T) {
	const gb = int64(1) << 30
	for _, tc := range []struct {
		mech  string
		rules int
		avail int64
		ok    bool
	}{
		{"none", 10_000_000, 2 * gb, true}, // the generated set only: 0.6 GiB
		{"ebpf-hash", 10_000_000, 20 * gb, true},
		{"ebpf-hash", 10_000_000, 2 * gb, false}, // 1.6 GiB > 1 GiB
		{"ipset", 10_000_000, 4 * gb, true},
		{"nftables", 1_000_000, 1 * gb, false},
		{"unknown", 1_000_000, 4 * gb, false},
	} {
		err := checkMemory(tc.mech, tc.rules, tc.avail)
		if (err == nil) != tc.ok {
			t.Errorf("checkMemory(%s, %d, %d GiB) = %v, want ok=%v", tc.mech, tc.rules, tc.avail/gb, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "lower --rules") {
			t.Errorf("%v: does not say what to do", err)
		}
	}
}

// On a cluster each mechanism and traversal is an escalating series sized
// by its rules; on the lab nothing escalates.
func TestEscalates(t *testing.T) {
	s, err := NewScenario(ScenarioOptions{Mechanisms: []string{"none", "nftables"}, Rules: []int{10, 1000}})
	if err != nil {
		t.Fatal(err)
	}
	p := scenario.Point{Labels: PointLabels("nftables", 1000, filter.TraversalEveryPacket)}
	s.SetBackend("lab", incluster.Options{})
	if _, _, ok := s.Escalates(p); ok {
		t.Error("a lab point escalates")
	}
	s.SetBackend(backendKubernetes, incluster.Options{})
	series, size, ok := s.Escalates(p)
	if !ok || series != "nftables (every-packet)" || size != 1000 {
		t.Errorf("cluster point: %q %d %v", series, size, ok)
	}
	if _, _, ok := s.Escalates(scenario.Point{Labels: map[string]string{}}); ok {
		t.Error("a point without labels escalates")
	}
	var _ scenario.Escalation = s
}
