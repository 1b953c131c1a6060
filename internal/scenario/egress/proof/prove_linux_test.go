package proof_test

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"

	"github.com/cnibench/cnibench/internal/lab"
	_ "github.com/cnibench/cnibench/internal/lab/datapaths" // the standard datapaths register themselves
	"github.com/cnibench/cnibench/internal/scenario/egress/proof"
	"github.com/cnibench/cnibench/internal/testutil"
)

func TestProbeValidation(t *testing.T) {
	do := func(f func() error) error { return f() }
	a, b := netip.MustParseAddr("240.0.0.1"), netip.MustParseAddr("240.0.0.2")
	noop := func(context.Context) error { return nil }
	for _, tc := range []struct {
		name string
		p    proof.Probe
	}{
		{"no namespaces", proof.Probe{Denied: a, Allowed: b}},
		{"same address", proof.Probe{ClientDo: do, ServerDo: do, Denied: a, Allowed: a}},
		{"no allowed", proof.Probe{ClientDo: do, ServerDo: do, Denied: a}},
		{"IPv6", proof.Probe{ClientDo: do, ServerDo: do, Denied: a, Allowed: netip.MustParseAddr("::1")}},
		{"ring not a power of two", proof.Probe{ClientDo: do, ServerDo: do, Denied: a, Allowed: b, Ring: 3000}},
		{"ring below MinUnanswered", proof.Probe{ClientDo: do, ServerDo: do, Denied: a, Allowed: b, Ring: 512}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := proof.MeasureEnforcement(context.Background(), tc.p, noop); err == nil {
				t.Error("MeasureEnforcement accepted an invalid probe")
			}
			if _, err := proof.MeasureRelease(context.Background(), tc.p, noop); err == nil {
				t.Error("MeasureRelease accepted an invalid probe")
			}
		})
	}
}

// proveLab is a veth-routing lab whose server pod has the extra address
// denied (240.1.2.3), and a drop rule for it in the client's node.
type proveLab struct {
	ep     lab.Endpoint
	denied netip.Addr
}

func newProveLab(t *testing.T) *proveLab {
	t.Helper()
	testutil.SkipUnlessRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l := lab.New(nil)
	if err := l.Up(ctx, lab.Options{Datapaths: []string{"veth-routing"}}); err != nil {
		t.Fatalf("lab up: %v", err)
	}
	runID := l.RunID()
	t.Cleanup(func() {
		if err := l.Down(context.Background()); err != nil {
			t.Errorf("lab down: %v", err)
		}
		out, err := exec.Command("ip", "netns", "list").Output()
		if err == nil && strings.Contains(string(out), lab.Prefix+runID+"-") {
			t.Errorf("run %s left namespaces:\n%s", runID, out)
		}
	})
	_, topo, err := l.Datapath("veth-routing")
	if err != nil {
		t.Fatal(err)
	}
	ep, err := l.Endpoint("veth-routing", lab.CrossNode)
	if err != nil {
		t.Fatal(err)
	}
	pl := &proveLab{ep: ep, denied: netip.MustParseAddr("240.1.2.3")}
	remove, err := topo.AddServerAddress(ctx, ep, pl.denied)
	if err != nil {
		t.Fatalf("AddServerAddress: %v", err)
	}
	t.Cleanup(func() {
		if err := remove(context.Background()); err != nil {
			t.Errorf("remove server address: %v", err)
		}
	})
	return pl
}

func (pl *proveLab) probe() proof.Probe {
	return proof.Probe{ClientDo: pl.ep.Client.Do, ServerDo: pl.ep.Server.Do, Denied: pl.denied, Allowed: pl.ep.ServerIP}
}

const testTable = "cnb-t-h4"

// deny installs, after sleeping for delay, an nft drop rule for the denied
// address in the client's node (forward hook, ahead of the lab's chain).
func (pl *proveLab) deny(delay time.Duration) func(context.Context) error {
	return func(context.Context) error {
		time.Sleep(delay)
		c, err := nftables.New(nftables.WithNetNSFd(pl.ep.ClientNode.Fd()))
		if err != nil {
			return err
		}
		tb := c.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: testTable})
		prio := nftables.ChainPriorityRef(-10)
		ch := c.AddChain(&nftables.Chain{Name: "deny", Table: tb, Type: nftables.ChainTypeFilter,
			Hooknum: nftables.ChainHookForward, Priority: prio})
		d := pl.denied.As4()
		c.AddRule(&nftables.Rule{Table: tb, Chain: ch, Exprs: []expr.Any{
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: d[:]},
			&expr.Counter{},
			&expr.Verdict{Kind: expr.VerdictDrop},
		}})
		return c.Flush()
	}
}

// allow deletes the deny table after sleeping for delay.
func (pl *proveLab) allow(delay time.Duration) func(context.Context) error {
	return func(context.Context) error {
		time.Sleep(delay)
		c, err := nftables.New(nftables.WithNetNSFd(pl.ep.ClientNode.Fd()))
		if err != nil {
			return err
		}
		c.DelTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: testTable})
		return c.Flush()
	}
}

// dropped reads the deny rule's packet counter.
func (pl *proveLab) dropped(t *testing.T) uint64 {
	t.Helper()
	c, err := nftables.New(nftables.WithNetNSFd(pl.ep.ClientNode.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	tb := &nftables.Table{Family: nftables.TableFamilyIPv4, Name: testTable}
	rules, err := c.GetRules(tb, &nftables.Chain{Name: "deny", Table: tb})
	if err != nil {
		t.Fatalf("read deny rule: %v", err)
	}
	var n uint64
	for _, r := range rules {
		for _, e := range r.Exprs {
			if cnt, ok := e.(*expr.Counter); ok {
				n += cnt.Packets
			}
		}
	}
	return n
}

// TestMeasureEnforcement proves an nft drop installed 5 ms into the action,
// then measures its removal, in a veth-routing lab; a no-op action is the
// negative control.
func TestMeasureEnforcement(t *testing.T) {
	pl := newProveLab(t)
	ctx := context.Background()
	const delay = 5 * time.Millisecond

	t.Run("negative control", func(t *testing.T) {
		p := pl.probe()
		p.MaxDuration = 300 * time.Millisecond
		p.NoPin = os.Getenv("NOPIN") != ""
		e, err := proof.MeasureEnforcement(ctx, p, func(context.Context) error { return nil })
		if !errors.Is(err, proof.ErrNotEnforced) || e.Proven {
			t.Fatalf("no-op action: proven %v, err %v; want not proven, ErrNotEnforced", e.Proven, err)
		}
		t.Logf("no-op: %v", err)
		if !e.AllowedOK || e.ProbesArrived == 0 {
			t.Errorf("no-op: allowed ok %v, probes arrived %d", e.AllowedOK, e.ProbesArrived)
		}
	})

	t.Run("enforce", func(t *testing.T) {
		e, err := proof.MeasureEnforcement(ctx, pl.probe(), pl.deny(delay))
		if err != nil {
			t.Fatalf("MeasureEnforcement: %v (%+v)", err, e)
		}
		t.Logf("enforced at %v (resolution %v), action returned at %v; %d probes (mean interval %v, throttled %v), %d lost; allowed %d/%d",
			e.Enforced, e.Resolution, e.Returned, e.ProbesSent, e.ProbeInterval, e.Throttled, e.Lost, e.AllowedArrived, e.AllowedSent)
		if !e.Proven || !e.AllowedOK {
			t.Errorf("proven %v, allowed ok %v", e.Proven, e.AllowedOK)
		}
		if e.Enforced < delay || e.Enforced > e.Returned+e.Resolution {
			t.Errorf("enforced at %v: want within [%v, returned %v + resolution %v]", e.Enforced, delay, e.Returned, e.Resolution)
		}
		if e.Resolution <= 0 || e.Lost != 0 {
			t.Errorf("resolution %v, %d probes lost before the last arrival: want above 0 and none lost", e.Resolution, e.Lost)
		}
		if n := pl.dropped(t); n < 1000 {
			t.Errorf("the deny rule counted %d drops; want at least the 1000 unanswered probes", n)
		}
	})

	t.Run("release", func(t *testing.T) {
		r, err := proof.MeasureRelease(ctx, pl.probe(), pl.allow(delay))
		if err != nil {
			t.Fatalf("MeasureRelease: %v (%+v)", err, r)
		}
		t.Logf("released at %v (resolution %v), action returned at %v; %d probes (mean interval %v, throttled %v), %d arrived",
			r.Released, r.Resolution, r.Returned, r.ProbesSent, r.ProbeInterval, r.Throttled, r.ProbesArrived)
		if !r.Proven || !r.AllowedOK {
			t.Errorf("proven %v, allowed ok %v", r.Proven, r.AllowedOK)
		}
		if r.Released < delay || r.Released > r.Returned+r.Resolution {
			t.Errorf("released at %v: want within [%v, returned %v + resolution %v]", r.Released, delay, r.Returned, r.Resolution)
		}
	})

	// Paced probes (as the scenario sends them): no two probes to Denied
	// closer than Interval, so the resolution is at least Interval.
	t.Run("paced", func(t *testing.T) {
		p := pl.probe()
		p.Interval = 25 * time.Microsecond
		e, err := proof.MeasureEnforcement(ctx, p, pl.deny(delay))
		if err != nil {
			t.Fatalf("MeasureEnforcement: %v (%+v)", err, e)
		}
		r, err := proof.MeasureRelease(ctx, p, pl.allow(delay))
		if err != nil {
			t.Fatalf("MeasureRelease: %v (%+v)", err, r)
		}
		t.Logf("paced: enforced at %v (resolution %v, mean interval %v), released at %v (resolution %v)",
			e.Enforced, e.Resolution, e.ProbeInterval, r.Released, r.Resolution)
		for what, d := range map[string]time.Duration{"enforce resolution": e.Resolution, "enforce mean interval": e.ProbeInterval,
			"release resolution": r.Resolution, "release mean interval": r.ProbeInterval} {
			if d < p.Interval {
				t.Errorf("%s %v: below the probe interval %v", what, d, p.Interval)
			}
		}
		if !e.Proven || !r.Proven {
			t.Errorf("proven: enforce %v, release %v", e.Proven, r.Proven)
		}
	})

	t.Run("release without a deny", func(t *testing.T) {
		_, err := proof.MeasureRelease(ctx, pl.probe(), func(context.Context) error { return nil })
		if !errors.Is(err, proof.ErrNotReleased) {
			t.Errorf("release of an address that was never denied: %v, want ErrNotReleased", err)
		}
	})
}
