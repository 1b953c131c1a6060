package suitecmd

import (
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/cli/clitest"
	"github.com/cnibench/cnibench/internal/cli/streams"
	"github.com/cnibench/cnibench/internal/lab"
)

// Bad list flags get one line naming the flag, exit status 2, and never
// reach the lab (these run without root).
func TestListFlagsRejectEmptyElements(t *testing.T) {
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"--datapaths", "veth-routing,,bridge"}, "--datapaths"},
		{[]string{"--datapaths", "veth-routing,"}, "--datapaths"},
		{[]string{"--datapaths", ""}, "--datapaths"},
		{[]string{"--tests", ",tcp_rr"}, "--tests"},
		{[]string{"--flows", "1,,32"}, "--flows"},
		{[]string{"--mtu", "1500, ,9000"}, "--mtu"},
		{[]string{"--flows", "1,x"}, "--flows"},
		{[]string{"--pin", "both"}, "--pin"},
		{[]string{"--wire", "fibre"}, "--wire"},
		{[]string{"--cpu-profile", "test=tcp_rr"}, "--cpu-profile test=tcp_rr: write --cpu-profile=test=tcp_rr"},
		{[]string{"--warmup", "-1s"}, "--warmup -1s: must not be negative"},
		{[]string{"--scenario", "l4lb", "--lb-cpu", "split", "--pin", "none"}, "--lb-cpu split: needs --pin same"},
	} {
		_, stderr, code := clitest.Execute(t, NewCommand, append(tc.args, "--out", t.TempDir())...)
		if code != 2 || !strings.HasPrefix(stderr, "cnibench: "+tc.flag) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line starting with %q", tc.args, code, stderr, tc.flag)
		}
	}
}

func TestOptionsFromFlags(t *testing.T) {
	cmd, f := newCommand(nil, streams.IOStreams{})
	if err := cmd.ParseFlags([]string{"--profile", "standard", "--datapaths", "veth-routing, bridge", "--seed", "42", "--pin", "split", "--no-baseline"}); err != nil {
		t.Fatal(err)
	}
	o, err := f.options(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if o.Seed != 42 || o.Repeat != 5 {
		t.Errorf("options: %+v", o)
	}
	lo, err := f.labOptions(cmd, o)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(lo.Datapaths, ",") != "veth-routing,bridge" || lo.Pin != "split" || !lo.NoBaseline || !lo.Conntrack {
		t.Errorf("lab options: %+v", lo)
	}
}

// The quick profile's matrix is pinned unless --pin says otherwise; the
// standard profile and scenarios are not.
func TestPinDefault(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, lab.PinSame},
		{[]string{"--profile", "quick"}, lab.PinSame},
		{[]string{"--pin", "none"}, lab.PinNone},
		{[]string{"--pin", "split"}, lab.PinSplit},
		{[]string{"--profile", "standard"}, lab.PinNone},
		{[]string{"--profile", "standard", "--pin", "same"}, lab.PinSame},
		{[]string{"--scenario", "services"}, lab.PinNone},
	} {
		cmd, f := newCommand(nil, streams.IOStreams{})
		if err := cmd.ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		o, err := f.options(cmd)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		lo, err := f.labOptions(cmd, o)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if lo.Pin != tc.want {
			t.Errorf("%v: pin %q, want %q", tc.args, lo.Pin, tc.want)
		}
	}
}
