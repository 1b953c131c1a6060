package lab

import (
	"slices"
	"strings"
	"testing"
)

func TestVariants(t *testing.T) {
	known := []string{"baseline", "veth-routing", "veth-routing-notrack", "bridge", "bridge-notrack", "vxlan",
		"vxlan-notrack", "ebpf-host-routing", "ebpf-host-routing-bare", "ebpf-host-routing-redirect", "netkit", "odd-notrack"}
	// ebpf-host-routing-redirect is opt-in (RegisterOptIn): listed, not a default.
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

func TestBackendOptions(t *testing.T) {
	for _, tc := range []struct {
		o    BackendOptions
		want string // "" valid, else a substring of the error
	}{
		{BackendOptions{}, ""},
		{BackendOptions{Datapaths: []string{"nope"}}, "--datapaths: unknown datapath \"nope\""},
		{BackendOptions{Pin: "both"}, "--pin \"both\""},
		{BackendOptions{Wire: "fiber"}, "--wire \"fiber\""},
	} {
		err := tc.o.Validate()
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.o, err, tc.want)
		}
	}
	o := BackendOptions{Datapaths: []string{"veth-routing"}}.withDefaults()
	if !slices.Equal(o.Datapaths, []string{"baseline", "veth-routing"}) || o.Pin != PinNone || o.Wire != DefaultWire || o.LockPath != DefaultLockPath {
		t.Errorf("withDefaults = %+v", o)
	}
	o = BackendOptions{Datapaths: []string{"veth-routing"}, NoBaseline: true}.withDefaults()
	if !slices.Equal(o.Datapaths, []string{"veth-routing"}) {
		t.Errorf("NoBaseline: datapaths %v", o.Datapaths)
	}
	if c := o.config(); c["datapaths"] != "veth-routing" || c["baseline"] != "false" || c["wire"] != DefaultWire || c["pin"] != PinNone {
		t.Errorf("config = %v", c)
	}
}
