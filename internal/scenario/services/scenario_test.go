package services

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/scenario"
)

func TestNewValidates(t *testing.T) {
	tests := []struct {
		o    Options
		want string // error substring; "" = valid
	}{
		{Options{}, ""},
		{Options{Implementations: []string{"ipvs"}}, "--implementations \"ipvs\""},
		{Options{Services: []int{0}}, "--services 0"},
		{Options{Services: []int{MaxServices + 1}}, "--services 16001"},
	}
	for _, tt := range tests {
		s, err := New(tt.o)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%+v: %v", tt.o, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%+v: error %v, want %q", tt.o, err, tt.want)
		case tt.want == "" && (len(s.Options().Implementations) != 4 || len(s.Options().Services) != len(DefaultServices)):
			t.Errorf("defaults not filled: %+v", s.Options())
		}
	}
}

func TestPointsAndCells(t *testing.T) {
	s, err := New(Options{Implementations: []string{ImplIPTables, ImplTCLB}, Services: []int{1, 1000}})
	if err != nil {
		t.Fatal(err)
	}
	pts := s.Points()
	if len(pts) != 4 || pts[0].Labels[LabelImplementation] != ImplIPTables || pts[3].Labels[LabelServices] != "1000" ||
		pts[0].Labels[scenario.LabelScenario] != ScenarioName {
		t.Fatalf("points %+v", pts)
	}
	cells := s.Cells(pts[0])
	if len(cells) != 6 {
		t.Fatalf("%d cells, want 6", len(cells))
	}
	for _, c := range cells {
		role, args, err := target(ImplIPTables, c)
		if err != nil {
			t.Fatal(err)
		}
		wantRole, vip := lab.RoleClient1, MeasuredVIP.String()
		if c.Path == PathHairpin {
			wantRole, vip = hairpinRole, HairpinVIP.String()
		}
		if role != wantRole || !strings.Contains(strings.Join(args, " "), vip) {
			t.Errorf("%+v: client %s args %v", c, role, args)
		}
		if (c.Test == engine.HTTP) != (args[0] == "--url") {
			t.Errorf("%+v: args %v", c, args)
		}
	}
	if _, _, err := target(ImplIPTables, scenario.Cell{Test: engine.UDPStream}); err == nil {
		t.Error("a udp_stream cell got a target")
	}
	// The baseline: the backends' own addresses, no VIP.
	_, args, _ := target(ImplNone, scenario.Cell{Test: engine.TCPCRR, Path: PathPodToService})
	if got := strings.Count(args[1], ","); got != len(backendPods)-1 || strings.Contains(args[1], MeasuredVIP.String()) {
		t.Errorf("none: %v", args)
	}
	_, args, _ = target(ImplNone, scenario.Cell{Test: engine.HTTP, Path: PathHairpin})
	if args[1] != "http://"+backendPods[0].IP.String()+":8080/" {
		t.Errorf("none hairpin: %v", args)
	}
}

// TestLayout: N services in all (N−1 fillers, the measured one's two
// ports last), plus the hairpin service, distinct VIPs in range.
func TestLayout(t *testing.T) {
	backends := []netip.Addr{netip.MustParseAddr("198.19.1.21"), netip.MustParseAddr("198.19.2.21")}
	hp := netip.MustParseAddr("198.19.1.21")
	for _, n := range []int{1, 100, MaxServices} {
		svcs := layout(n, backends, hp)
		if len(svcs) != n-1+4 {
			t.Fatalf("n=%d: %d service ports, want %d", n, len(svcs), n+3)
		}
		last := svcs[len(svcs)-1]
		if last.VIP != MeasuredVIP || last.Port != HTTPPort || len(last.Endpoints) != 2 {
			t.Errorf("n=%d: last %+v, want the measured service", n, last)
		}
		seen := map[netip.AddrPort]bool{}
		for _, s := range svcs {
			k := netip.AddrPortFrom(s.VIP, s.Port)
			if seen[k] || !FillerVIPs.Contains(s.VIP) {
				t.Fatalf("n=%d: %v duplicate or out of %v", n, k, FillerVIPs)
			}
			seen[k] = true
		}
		if _, err := KubeProxyRules(svcs[max(0, len(svcs)-10):]); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCheckCell: the proof refuses every way a cell can have taken
// another path than its label says.
func TestCheckCell(t *testing.T) {
	two := map[netip.Addr]bool{backendPods[0].IP: true, backendPods[2].IP: true}
	one := map[netip.Addr]bool{backendPods[0].IP: true}
	crr := scenario.Cell{Test: engine.TCPCRR, Path: PathPodToService}
	rr := scenario.Cell{Test: engine.TCPRR, Path: PathPodToService}
	tests := []struct {
		name  string
		impl  string
		c     scenario.Cell
		st    ctStats
		trans uint64
		want  string
	}{
		{"iptables ok", ImplIPTables, crr, ctStats{vip: 10, nat: 10, backends: two}, 0, ""},
		{"iptables no DNAT", ImplIPTables, crr, ctStats{backends: two}, 0, "DNAT was not taken"},
		{"iptables untranslated", ImplIPTables, crr, ctStats{vip: 10, nat: 4, backends: two}, 0, "6 of 10"},
		{"ebpf ok", ImplSocketLB, crr, ctStats{backends: two}, 5, ""},
		{"ebpf idle", ImplTCLB, crr, ctStats{backends: two}, 0, "translated nothing"},
		{"ebpf bypassed", ImplTCLB, crr, ctStats{vip: 3, nat: 3, backends: two}, 5, "bypassed"},
		{"one backend", ImplSocketLB, crr, ctStats{backends: one}, 5, "only one backend"},
		{"rr may land on one", ImplSocketLB, rr, ctStats{backends: one}, 5, ""},
		{"none ok", ImplNone, crr, ctStats{backends: two}, 0, ""},
		{"none NATed", ImplNone, crr, ctStats{nat: 2, backends: two}, 0, "without a service"},
		{"hairpin has one", ImplIPTables, scenario.Cell{Test: engine.TCPCRR, Path: PathHairpin}, ctStats{vip: 3, nat: 3, backends: one}, 0, ""},
	}
	for _, tt := range tests {
		err := checkCell(tt.impl, tt.c, tt.st, tt.trans)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.want)
		}
	}
}
