package suite

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestProfiles(t *testing.T) {
	for _, name := range []string{"quick", "standard"} {
		o, err := Profile(name)
		if err != nil {
			t.Fatal(err)
		}
		o.OutDir = "x"
		if err := o.Validate([]string{"baseline"}); err != nil {
			t.Errorf("%s profile invalid: %v", name, err)
		}
	}
	if _, err := Profile("huge"); err == nil {
		t.Error("unknown profile accepted")
	}
	q, _ := Profile("quick")
	// The seeds' matrix: tcp tests at 1 and 32 flows, udp_stream, http.
	v := q.testVariants(true)
	if len(v) != 8 || v[0] != [2]string{"tcp_stream", "1"} || v[1] != [2]string{"tcp_stream", "32"} {
		t.Errorf("quick variants: %v", v)
	}
	// Further MTUs re-run only the MTU-sensitive single-flow tests.
	if sweep := q.testVariants(false); len(sweep) != 2 {
		t.Errorf("MTU sweep variants: %v", sweep)
	}
}

func TestValidateOptions(t *testing.T) {
	base, _ := Profile("quick")
	base.OutDir = "out"
	cases := []struct {
		mut  func(*Options)
		want string
	}{
		{func(o *Options) { o.Datapaths = []string{"calico"} }, "--datapaths"},
		{func(o *Options) { o.Tests = []string{"tcp_maerts"} }, "--tests"},
		{func(o *Options) { o.Tests = nil }, "--tests"},
		{func(o *Options) { o.Flows = []int{0} }, "--flows 0"},
		{func(o *Options) { o.Repeat = 0 }, "--repeat"},
		{func(o *Options) { o.Duration = time.Millisecond }, "--duration"},
		{func(o *Options) { o.MTUs = []int{100} }, "--mtu 100"},
		{func(o *Options) { o.HTTPClients = 0 }, "--http-clients"},
		{func(o *Options) { o.OutDir = "" }, "--out"},
		{func(o *Options) { o.Pin = "both" }, "--pin"},
		{func(o *Options) { o.Wire = "fibre" }, "--wire"},
	}
	for _, c := range cases {
		o := base
		c.mut(&o)
		err := o.Validate([]string{"baseline", "veth-routing"})
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("got %v, want an error starting with %q", err, c.want)
		}
	}
}

func TestSchedule(t *testing.T) {
	var cells []cell
	for _, d := range []string{"baseline", "veth-routing", "bridge"} {
		for _, test := range []string{"tcp_rr", "tcp_crr", "tcp_stream"} {
			for _, mtu := range []int{1500, 9000} {
				cells = append(cells, cell{Datapath: d, Path: "cross-node", Test: test, Flows: 1, MTU: mtu})
			}
		}
	}
	a := schedule(cells, 5, 42)
	if len(a) != 5 {
		t.Fatalf("%d repeats, want 5", len(a))
	}
	key := func(c cell) string { return c.String() }
	for r, order := range a {
		// Every repeat runs every cell exactly once.
		got := map[string]int{}
		for _, c := range order {
			got[key(c)]++
		}
		for _, c := range cells {
			if got[key(c)] != 1 {
				t.Errorf("repeat %d runs %s %d times", r, c, got[key(c)])
			}
		}
		if len(order) != len(cells) {
			t.Errorf("repeat %d has %d cells, want %d", r, len(order), len(cells))
		}
	}
	// Orders differ between repeats and from the matrix's (no block of a
	// datapath, no MTU after the whole main matrix).
	same := func(x, y []cell) bool {
		return slices.EqualFunc(x, y, func(p, q cell) bool { return p.String() == q.String() })
	}
	if same(a[0], a[1]) || same(a[0], cells) {
		t.Error("repeats are not shuffled")
	}
	firstHalf := a[0][:len(cells)/2]
	if !slices.ContainsFunc(firstHalf, func(c cell) bool { return c.MTU == 9000 }) {
		t.Error("MTU 9000 cells not interleaved with the main matrix")
	}
	// The same seed replays the same order; another seed does not.
	for r := range a {
		if !same(a[r], schedule(cells, 5, 42)[r]) {
			t.Errorf("seed 42 does not replay repeat %d", r)
		}
	}
	if same(a[0], schedule(cells, 5, 43)[0]) {
		t.Error("seeds 42 and 43 give the same order")
	}
}

func TestNewSeedAndToken(t *testing.T) {
	s1, err1 := newSeed()
	s2, err2 := newSeed()
	if err1 != nil || err2 != nil || s1 == 0 || s1 == s2 {
		t.Errorf("seeds %d, %d (%v, %v)", s1, s2, err1, err2)
	}
	t1, _ := newToken()
	t2, _ := newToken()
	if len(t1) != 32 || t1 == t2 {
		t.Errorf("tokens %q, %q", t1, t2)
	}
}

func TestVariants(t *testing.T) {
	known := []string{"baseline", "veth-routing", "veth-routing-notrack", "bridge", "bridge-notrack", "vxlan",
		"vxlan-notrack", "ebpf-host-routing", "ebpf-host-routing-bare", "netkit", "odd-notrack"}
	if got := defaultDatapaths(known); !slices.Equal(got, []string{"baseline", "veth-routing", "bridge", "vxlan", "ebpf-host-routing", "netkit", "odd-notrack"}) {
		t.Errorf("defaultDatapaths = %v", got)
	}
	for _, tc := range []struct {
		selected, want []string
	}{
		{[]string{"baseline", "veth-routing"}, []string{"veth-routing-notrack"}},
		{[]string{"ebpf-host-routing", "bridge"}, []string{"bridge-notrack", "ebpf-host-routing-bare"}},
		{[]string{"veth-routing", "veth-routing-notrack"}, nil}, // listed: runs the whole matrix
		{[]string{"baseline", "netkit"}, nil},
	} {
		if got := scenarioVariants(tc.selected, known); !slices.Equal(got, tc.want) {
			t.Errorf("scenarioVariants(%v) = %v, want %v", tc.selected, got, tc.want)
		}
	}
}
