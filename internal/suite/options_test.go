package suite

import (
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

func TestBPFDelta(t *testing.T) {
	got := bpfDelta(map[string]uint64{"node1.redirect_peer": 5, "node2.redirect_peer": 1},
		map[string]uint64{"node1.redirect_peer": 15, "node2.redirect_peer": 4, "node1.pass": 2})
	if got["bpf_redirect_peer_packets"] != 13 || got["bpf_pass_packets"] != 2 {
		t.Fatalf("bpfDelta = %v", got)
	}
}
