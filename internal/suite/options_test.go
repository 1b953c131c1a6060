package suite

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/report"
)

func TestProfiles(t *testing.T) {
	for _, name := range []string{"quick", "standard"} {
		o, err := Profile(name)
		if err != nil {
			t.Fatal(err)
		}
		o.OutDir = "x"
		o.Backend = &fakeBackend{}
		if err := o.Validate(); err != nil {
			t.Errorf("%s profile invalid: %v", name, err)
		}
	}
	if _, err := Profile("huge"); err == nil {
		t.Error("unknown profile accepted")
	}
	s, _ := Profile("standard")
	// The seeds' matrix: tcp tests at 1 and 32 flows, udp_stream, http,
	// tcp_rr_loaded.
	v := s.testVariants(true)
	if len(v) != 9 || v[0] != [2]string{"tcp_stream", "1"} || v[1] != [2]string{"tcp_stream", "32"} {
		t.Errorf("standard variants: %v", v)
	}
	// Further MTUs re-run only the MTU-sensitive single-flow tests.
	if sweep := s.testVariants(false); len(sweep) != 2 {
		t.Errorf("MTU sweep variants: %v", sweep)
	}
	// The quick profile grades the headline: the three tcp tests at one
	// flow, one MTU.
	q, _ := Profile("quick")
	want := [][2]string{{"tcp_stream", "1"}, {"tcp_rr", "1"}, {"tcp_crr", "1"}}
	if v := q.testVariants(true); !slices.Equal(v, want) || !slices.Equal(q.MTUs, []int{1500}) {
		t.Errorf("quick variants %v at MTUs %v, want %v at 1500", v, q.MTUs, want)
	}
}

// The report lists what a quick run leaves out of the standard matrix
// from its own copy of that matrix: it must be the standard profile's.
func TestReportKnowsStandardMatrix(t *testing.T) {
	s, _ := Profile("standard")
	itoa := func(v []int) []string {
		out := make([]string, len(v))
		for i, x := range v {
			out[i] = strconv.Itoa(x)
		}
		return out
	}
	if !slices.Equal(report.StandardTests, s.Tests) || !slices.Equal(report.StandardFlows, itoa(s.Flows)) || !slices.Equal(report.StandardMTUs, itoa(s.MTUs)) {
		t.Errorf("report's standard matrix %v × %v × %v, the profile's %v × %v × %v",
			report.StandardTests, report.StandardFlows, report.StandardMTUs, s.Tests, s.Flows, s.MTUs)
	}
	q, _ := Profile("quick")
	cfg := map[string]string{"profile": "quick", "tests": strings.Join(q.Tests, ","), "flows": strings.Join(itoa(q.Flows), ","), "mtus": strings.Join(itoa(q.MTUs), ",")}
	if l := report.LeftOut(cfg); len(l) == 0 {
		t.Error("the quick profile leaves nothing out, by the report")
	}
}

func TestValidateOptions(t *testing.T) {
	base, _ := Profile("quick")
	base.OutDir = "out"
	base.Backend = &fakeBackend{}
	cases := []struct {
		mut  func(*Options)
		want string
	}{
		{func(o *Options) { o.Backend = nil }, "no backend"},
		{func(o *Options) { o.Backend = &fakeBackend{name: "kubernetes"}; o.MTUs = []int{1500, 9000} }, "--mtu: the kubernetes backend"},
		{func(o *Options) { o.Tests = []string{"tcp_maerts"} }, "--tests"},
		{func(o *Options) { o.Tests = nil }, "--tests"},
		{func(o *Options) { o.Paths = []string{"cross-node", "pod-to-pod"} }, `--paths: unknown path "pod-to-pod"`},
		{func(o *Options) { o.Paths = []string{"node-to-node"} }, `--paths: unknown path "node-to-node"`},
		{func(o *Options) { o.Paths = []string{"cross-node"}; o.Scenario = "services" }, "--paths: the matrix's paths"},
		{func(o *Options) { o.Flows = []int{0} }, "--flows 0"},
		{func(o *Options) { o.Repeat = 0 }, "--repeat"},
		{func(o *Options) { o.Duration = time.Millisecond }, "--duration"},
		{func(o *Options) { o.MTUs = []int{100} }, "--mtu 100"},
		{func(o *Options) { o.HTTPClients = 0 }, "--http-clients"},
		{func(o *Options) { o.OutDir = "" }, "--out"},
	}
	for _, c := range cases {
		o := base
		c.mut(&o)
		err := o.Validate()
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
	// The matrix is one point: its cells are shuffled across datapaths
	// and MTUs.
	flat := func(steps [][]step) [][]cell {
		out := make([][]cell, len(steps))
		for r, s := range steps {
			for _, x := range s {
				out[r] = append(out[r], x.cells...)
			}
		}
		return out
	}
	sched := func(seed uint64) [][]cell { return flat(schedule([][]cell{cells}, 5, seed)) }
	a := sched(42)
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
		if !same(a[r], sched(42)[r]) {
			t.Errorf("seed 42 does not replay repeat %d", r)
		}
	}
	if same(a[0], sched(43)[0]) {
		t.Error("seeds 42 and 43 give the same order")
	}
}

// A scenario's points are shuffled per repeat, each point's cells kept
// together (a point is prepared once per repeat) and shuffled within it.
func TestSchedulePoints(t *testing.T) {
	var points [][]cell
	for p := range 6 {
		var cs []cell
		for _, test := range []string{"tcp_rr", "udp_stream", "icmp_echo", "tcp_stream"} {
			cs = append(cs, cell{Datapath: strconv.Itoa(p), Path: "cross-node", Test: test, Flows: 1, MTU: 1500})
		}
		points = append(points, cs)
	}
	a := schedule(points, 4, 7)
	var orders []string
	for r, steps := range a {
		if len(steps) != len(points) {
			t.Fatalf("repeat %d: %d points, want %d", r, len(steps), len(points))
		}
		seen := map[int]bool{}
		var o string
		for _, s := range steps {
			if seen[s.point] {
				t.Errorf("repeat %d runs point %d twice", r, s.point)
			}
			seen[s.point] = true
			o += strconv.Itoa(s.point)
			if len(s.cells) != 4 || slices.ContainsFunc(s.cells, func(c cell) bool { return c.Datapath != strconv.Itoa(s.point) }) {
				t.Errorf("repeat %d point %d: cells %v", r, s.point, s.cells)
			}
		}
		orders = append(orders, o)
	}
	if orders[0] == orders[1] && orders[1] == orders[2] {
		t.Errorf("points not shuffled between repeats: %v", orders)
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
