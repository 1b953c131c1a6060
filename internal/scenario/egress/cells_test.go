package egress

import (
	"slices"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/internal/scenario/egress/filter"
	"github.com/cnibench/cnibench/internal/scenario/egress/incluster"
	"github.com/cnibench/cnibench/pkg/result"
)

func TestFixedTraversal(t *testing.T) {
	tests := []struct{ mech, want string }{
		{"none", filter.TraversalEveryPacket}, {"ebpf-lpm", filter.TraversalEveryPacket}, {"ebpf-hash", filter.TraversalEveryPacket},
		{filter.MechCiliumLike, filter.TraversalEveryPacket}, {incluster.MechNetworkPolicy, filter.TraversalEveryPacket},
		{filter.MechCalicoLike, filter.TraversalNewConnection},
		{"ipset", ""}, {filter.MechIPSetDefault, ""}, {"iptables", ""}, {"nftables", ""},
	}
	for _, tt := range tests {
		if got := fixedTraversal(tt.mech); got != tt.want {
			t.Errorf("fixedTraversal(%s) = %q, want %q", tt.mech, got, tt.want)
		}
	}
}

// limitMech is a fake mechanism with a product's limit.
type limitMech struct{ fakeMech }

func (limitMech) LimitReason() string { return "a product's map holds at most 100" }

func TestCompositePoints(t *testing.T) {
	lookup := func(name string) (filter.Mechanism, error) {
		switch name {
		case filter.MechCalicoLike:
			return fakeMech{name: name, max: 10_000_000}, nil
		case filter.MechCiliumLike:
			return limitMech{fakeMech{name: name, max: 100}}, nil
		}
		return fakeLookup(name)
	}
	s, err := newScenario(ScenarioOptions{Mechanisms: []string{filter.MechCalicoLike, filter.MechCiliumLike}, Rules: []int{10, 1000}, Traversals: filter.Traversals}, lookup)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range s.Points() {
		got = append(got, p.Labels[LabelMechanism]+"/"+p.Labels[LabelRules]+"/"+p.Labels[LabelTraversal]+": "+p.SkipReason())
	}
	want := []string{
		"calico-like/10/new-connection: ", "calico-like/1000/new-connection: ",
		"cilium-like/10/every-packet: ",
		"cilium-like/1000/every-packet: too large: cilium-like holds at most 100 rules, asked for 1000: a product's map holds at most 100",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("points:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Only every-packet asked: calico-like still runs, as new-connection.
	s, err = newScenario(ScenarioOptions{Mechanisms: []string{filter.MechCalicoLike}, Rules: []int{10}}, lookup)
	if err != nil {
		t.Fatal(err)
	}
	if ps := s.Points(); len(ps) != 1 || ps[0].Labels[LabelTraversal] != filter.TraversalNewConnection {
		t.Fatalf("calico-like with every-packet asked: %+v", ps)
	}
}

type fakePlace struct{ backend.Place }

func TestCellsAndHandshakeTarget(t *testing.T) {
	s, err := newScenario(ScenarioOptions{Mechanisms: []string{"none"}, Rules: []int{10}}, fakeLookup)
	if err != nil {
		t.Fatal(err)
	}
	cells := s.Cells(scenario.Point{})
	if len(cells) != len(scenario.DefaultCells())+1 || cells[len(cells)-1].Labels[LabelUDPHandshake] == "" || cells[len(cells)-1].Test != result.TestUDPStream {
		t.Fatalf("lab cells lack the handshake cell: %+v", cells)
	}
	s.backend = backendKubernetes
	if len(s.Cells(scenario.Point{})) != len(scenario.DefaultCells()) {
		t.Fatal("a cluster's points got the lab's handshake cell")
	}

	path := backend.Path{Client: fakePlace{}, Target: "198.18.1.2:12870"}
	tests := []struct {
		cell scenario.Cell
		want []string
	}{
		{scenario.Cell{Test: result.TestUDPStream, Flows: 1}, []string{"--target", "198.18.1.2:12870"}},
		{UDPHandshakeCell, []string{"--target", "198.18.1.2:12870", "--udp-handshake"}},
		{scenario.Cell{Test: result.TestTCPRR, Flows: 1}, []string{"--target", "198.18.1.2:12870"}},
	}
	for _, tt := range tests {
		tg, err := cellTarget(path, tt.cell)
		if err != nil || !slices.Equal(tg.Args, tt.want) || tg.Client == nil {
			t.Errorf("cellTarget(%v) = %+v, %v; want args %v", tt.cell.Labels, tg, err, tt.want)
		}
	}
	if _, err := cellTarget(backend.Path{}, UDPHandshakeCell); err == nil {
		t.Error("no path: want an error")
	}
}
