package filter

import (
	"context"
	"net/netip"
	"testing"

	"github.com/cnibench/cnibench/internal/testutil"
)

// A local target filters a namespace's own egress (a pod filtering
// itself, the cluster's raw points): the filter goes on the client's own
// interface (nftables' output hook matching oifname, eBPF at TCX egress),
// drops what the deny set covers, lets the rest through and is gone after
// Close. The nftables connection is opened without entering a namespace
// (NSFd −1), as in a pod without CAP_SYS_ADMIN: the test runs it on the
// client's thread.
func TestLocalTarget(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	denied := netip.MustParseAddr("247.1.2.3")
	for _, name := range []string{"nftables", "ebpf-lpm", "ebpf-hash"} {
		t.Run(name, func(t *testing.T) {
			m, err := Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			probe := m.Probe
			if lp, ok := m.(LocalProber); ok {
				probe = lp.ProbeLocal
			}
			testutil.SkipIfNotSupported(t, probe(), ErrNotSupported)
			cidrs, err := Generate(1, 100, denied)
			if err != nil {
				t.Fatal(err)
			}
			spare, ok := uncovered(cidrs)
			if !ok {
				t.Fatal("no address outside the generated set")
			}
			l := newEBPFLab(t, denied, spare)
			l.mustArrive(t, l.denied, "before Load")
			ctx := context.Background()
			tg := Target{NSFd: int(l.client), Dev: "eth0", Do: l.do(l.client), Local: true}
			if name == "nftables" {
				tg.NSFd = -1
			}
			var f Filter
			load := func() (err error) {
				f, _, err = m.Load(ctx, tg, cidrs, Options{})
				return err
			}
			if name == "nftables" {
				err = l.do(l.client)(load)
			} else {
				err = load()
			}
			if err != nil {
				t.Fatal(err)
			}
			l.mustDrop(t, f, l.denied, "after Load")
			l.mustArrive(t, l.ordinary, "after Load")
			l.mustArrive(t, l.spare, "after Load")
			closeF := func() error { return f.Close(ctx) }
			if name == "nftables" {
				err = l.do(l.client)(closeF)
			} else {
				err = closeF()
			}
			if err != nil {
				t.Fatal(err)
			}
			l.mustArrive(t, l.denied, "after Close")
		})
	}
}
