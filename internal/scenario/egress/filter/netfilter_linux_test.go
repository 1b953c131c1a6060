package filter

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/testutil"
)

// nfMechanisms are the netfilter mechanisms and the programs each needs.
var nfMechanisms = []struct {
	name  string
	progs []string
}{
	{"iptables", []string{"iptables-nft", "iptables-nft-restore"}},
	{"iptables-legacy", []string{"iptables-legacy", "iptables-legacy-restore"}},
	{"ipset", []string{"ipset", "iptables-nft", "iptables-nft-restore"}},
	{"nftables", nil},
}

var (
	nfDenied = netip.MustParseAddr("240.100.7.9") // inside a generated deny CIDR
	nfSeed   = uint64(10)
)

// nfFreeAddr returns an address in DenyRange outside every prefix.
func nfFreeAddr(tb testing.TB, cidrs []netip.Prefix) netip.Addr {
	tb.Helper()
	for _, s := range []string{"250.1.2.3", "247.9.8.7", "243.33.44.55", "254.200.100.50", "241.0.0.77"} {
		a := netip.MustParseAddr(s)
		free := true
		for _, p := range cidrs {
			if p.Contains(a) {
				free = false
				break
			}
		}
		if free {
			return a
		}
	}
	tb.Fatal("no free address outside the generated deny cidrs")
	return netip.Addr{}
}

func nfLookup(tb testing.TB, name string, progs []string) Mechanism {
	tb.Helper()
	testutil.SkipUnlessRoot(tb)
	if len(progs) > 0 {
		testutil.NeedProgram(tb, progs...)
	}
	m, err := Lookup(name)
	if err != nil {
		tb.Fatal(err)
	}
	if err := m.Probe(); err != nil {
		tb.Fatalf("probe %s: %v (programs are present)", name, err)
	}
	return m
}

func TestNetfilterEnforcement(t *testing.T) {
	for _, mech := range nfMechanisms {
		for _, tc := range []struct {
			n      int
			bypass bool
		}{{10, false}, {10, true}, {10_000, false}} {
			t.Run(fmt.Sprintf("%s/n=%d/bypass=%v", mech.name, tc.n, tc.bypass), func(t *testing.T) {
				m := nfLookup(t, mech.name, mech.progs)
				// Each case has its own namespaces; running them side by
				// side overlaps the waits for probes that must not arrive.
				t.Parallel()
				ctx := t.Context()
				cidrs, err := Generate(nfSeed, tc.n, nfDenied)
				if err != nil {
					t.Fatal(err)
				}
				extra := nfFreeAddr(t, cidrs)
				lab := newNFLab(t, nfDenied, extra)
				ordinary := testutil.StartUDPEcho(t, lab.server, netip.MustParseAddr(nfServerAddr))
				denied := testutil.StartUDPEcho(t, lab.server, nfDenied)
				other := testutil.StartUDPEcho(t, lab.server, extra)

				lab.expect(t, "before load", denied, true)
				lab.expect(t, "before load", other, true)

				start := time.Now()
				f, info, err := m.Load(ctx, lab.target, cidrs, Options{EstablishedBypass: tc.bypass})
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("load of %d: %v, %+v", tc.n, time.Since(start), info)
				closed := false
				t.Cleanup(func() {
					if !closed {
						_ = f.Close(ctx)
					}
				})
				wantTrav := map[bool]string{false: TraversalEveryPacket, true: TraversalNewConnection}[tc.bypass]
				if info.Traversal != wantTrav || info.Method == "" || info.Batches < 1 {
					t.Errorf("LoadInfo %+v: want traversal %s, a method and batches", info, wantTrav)
				}
				s0 := nfStats(t, f, tc.n)
				lab.expect(t, "after load", denied, false)
				s1 := nfStats(t, f, tc.n)
				if s1.Dropped <= s0.Dropped {
					t.Fatalf("after load: dropped counter %d -> %d, want it to grow", s0.Dropped, s1.Dropped)
				}
				lab.expect(t, "after load, ordinary address", ordinary, true)
				lab.expect(t, "after load, address not denied", other, true)

				if err := f.Detach(ctx); err != nil {
					t.Fatal(err)
				}
				lab.expect(t, "detached (negative control)", denied, true)
				if err := f.Attach(ctx); err != nil {
					t.Fatal(err)
				}
				lab.expect(t, "attached again", denied, false)
				if s := nfStats(t, f, tc.n); s.Dropped <= s1.Dropped {
					t.Fatalf("attached again: dropped counter %d -> %d, want it to grow", s1.Dropped, s.Dropped)
				}

				added := netip.PrefixFrom(extra, 32)
				if err := f.Add(ctx, added); err != nil {
					t.Fatal(err)
				}
				lab.expect(t, "after Add "+added.String(), other, false)
				nfStats(t, f, tc.n+1)
				if err := f.Remove(ctx, added); err != nil {
					t.Fatal(err)
				}
				lab.expect(t, "after Remove "+added.String(), other, true)
				lab.expect(t, "after Remove, still denied", denied, false)
				nfStats(t, f, tc.n)

				if err := f.Close(ctx); err != nil {
					t.Fatal(err)
				}
				closed = true
				if err := f.Close(ctx); err != nil {
					t.Fatalf("second Close: %v", err)
				}
				if left := lab.leftovers(t); len(left) > 0 {
					t.Fatalf("left after Close: %q", left)
				}
				lab.expect(t, "after close", denied, true)
			})
		}
	}
}

func nfStats(tb testing.TB, f Filter, rules int) Stats {
	tb.Helper()
	s, err := f.Stats(tb.Context())
	if err != nil {
		tb.Fatal(err)
	}
	if s.Rules != rules {
		tb.Fatalf("Stats.Rules %d, want %d", s.Rules, rules)
	}
	if s.KernelBytesKnown != (s.KernelBytes > 0) {
		tb.Fatalf("Stats KernelBytes %d but KernelBytesKnown %v", s.KernelBytes, s.KernelBytesKnown)
	}
	return s
}

// TestNetfilterLoadFailureLeavesNothing: a load that fails part-way (a
// CIDR nftables cannot hold, an interface name iptables rejects) leaves
// nothing behind.
func TestNetfilterLoadFailureLeavesNothing(t *testing.T) {
	bad := []netip.Prefix{netip.MustParsePrefix("240.0.0.0/24"), netip.MustParsePrefix("255.255.255.0/24")}
	for _, mech := range nfMechanisms {
		t.Run(mech.name, func(t *testing.T) {
			m := nfLookup(t, mech.name, mech.progs)
			lab := newNFLab(t)
			target := lab.target
			cidrs := bad
			if mech.name != "nftables" {
				target.Dev = "bad!name/with-slash-and-far-too-long"
				cidrs = bad[:1]
			}
			if f, _, err := m.Load(t.Context(), target, cidrs, Options{}); err == nil {
				_ = f.Close(t.Context())
				t.Fatal("load succeeded, want an error")
			} else {
				t.Logf("load failed as expected: %v", err)
			}
			if left := lab.leftovers(t); len(left) > 0 {
				t.Fatalf("left after a failed load: %q", left)
			}
		})
	}
}

func TestNoneMechanism(t *testing.T) {
	m, err := Lookup("none")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Probe(); err != nil {
		t.Fatal(err)
	}
	f, info, err := m.Load(t.Context(), Target{}, []netip.Prefix{netip.MustParsePrefix("240.0.0.0/8")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s, err := f.Stats(t.Context()); err != nil || s != (Stats{}) {
		t.Fatalf("Stats %+v, %v: want zero", s, err)
	}
	if info.Traversal != TraversalEveryPacket || info.LoaderPeakRSS != 0 {
		t.Fatalf("LoadInfo %+v", info)
	}
	if err := errors.Join(f.Detach(t.Context()), f.Attach(t.Context()), f.Close(t.Context()), f.Close(t.Context())); err != nil {
		t.Fatal(err)
	}
}

// TestNetfilterBigLoad times loads of 100k and 1M CIDRs per mechanism (a
// manual run, not part of the default tests):
//
//	CNIBENCH_EGRESS_BIG=1 go test -count=1 -run BigLoad -v -timeout 60m ./internal/scenario/egress/
//
// CNIBENCH_EGRESS_BIG_N=100000,1000000 and CNIBENCH_EGRESS_BIG_MECH=ipset,...
// choose the sizes and mechanisms. Add and Remove get a minute each.
func TestNetfilterBigLoad(t *testing.T) {
	if os.Getenv("CNIBENCH_EGRESS_BIG") != "1" {
		t.Skip("manual: set CNIBENCH_EGRESS_BIG=1")
	}
	sizes := []int{100_000, 1_000_000}
	if v := os.Getenv("CNIBENCH_EGRESS_BIG_N"); v != "" {
		sizes = nil
		for _, s := range strings.Split(v, ",") {
			n, err := strconv.Atoi(s)
			if err != nil {
				t.Fatalf("CNIBENCH_EGRESS_BIG_N: %v", err)
			}
			sizes = append(sizes, n)
		}
	}
	only := os.Getenv("CNIBENCH_EGRESS_BIG_MECH")
	opTimeout := time.Minute
	for _, n := range sizes {
		cidrs, err := Generate(nfSeed, n, nfDenied)
		if err != nil {
			t.Fatal(err)
		}
		for _, mech := range nfMechanisms {
			if only != "" && !strings.Contains(","+only+",", ","+mech.name+",") {
				continue
			}
			t.Run(fmt.Sprintf("%s/n=%d", mech.name, n), func(t *testing.T) {
				m := nfLookup(t, mech.name, mech.progs)
				extra := nfFreeAddr(t, cidrs)
				lab := newNFLab(t, nfDenied, extra)
				ordinary := testutil.StartUDPEcho(t, lab.server, netip.MustParseAddr(nfServerAddr))
				denied := testutil.StartUDPEcho(t, lab.server, nfDenied)
				ctx := t.Context()
				hwm0 := nfVmHWM(t)
				start := time.Now()
				f, info, err := m.Load(ctx, lab.target, cidrs, Options{})
				load := time.Since(start)
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = f.Close(ctx) }()
				lab.expect(t, "after load", denied, false)
				lab.expect(t, "after load", ordinary, true)
				ts := time.Now()
				s, err := f.Stats(ctx)
				if err != nil || s.Dropped == 0 {
					t.Fatalf("stats %+v, %v", s, err)
				}
				statsT := time.Since(ts)
				// One Add and one Remove, each bounded by opTimeout: past it
				// the figure is reported as a timeout (iptables-nft deletes
				// by dumping the whole chain, minutes at 1M).
				op := func(f func(context.Context, netip.Prefix) error) string {
					octx, cancel := context.WithTimeout(ctx, opTimeout)
					defer cancel()
					start := time.Now()
					if err := f(octx, netip.PrefixFrom(extra, 32)); err != nil {
						if octx.Err() != nil {
							return "timeout>" + opTimeout.String()
						}
						t.Fatal(err)
					}
					return time.Since(start).Round(time.Millisecond).String()
				}
				addT := op(f.Add)
				removeT := op(f.Remove)
				tc := time.Now()
				if err := f.Close(ctx); err != nil {
					t.Fatal(err)
				}
				t.Logf("RESULT %s n=%d load=%v loaderRSS=%.1fMiB testProcVmHWM=%.1f->%.1fMiB stats=%v add=%v remove=%v close=%v kernelBytes=%d(%v) method=%q batches=%d",
					mech.name, n, load.Round(time.Millisecond), float64(info.LoaderPeakRSS)/(1<<20),
					float64(hwm0)/(1<<20), float64(nfVmHWM(t))/(1<<20), statsT.Round(time.Millisecond),
					addT, removeT, time.Since(tc).Round(time.Millisecond),
					s.KernelBytes, s.KernelBytesKnown, info.Method, info.Batches)
			})
		}
	}
}

// nfVmHWM is this process's peak RSS in bytes (VmHWM).
func nfVmHWM(tb testing.TB) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return kb * 1024
		}
	}
	return 0
}

// TestRunInPeakRSSIsTheChilds: a small child of a big parent reports its
// own peak RSS (rusage would report the parent's, see sampleRSS).
func TestRunInPeakRSSIsTheChilds(t *testing.T) {
	testutil.NeedProgram(t, "sleep")
	const big = 96 << 20
	ballast := make([]byte, big)
	for i := range ballast {
		ballast[i] = byte(i) // touch every page
	}
	self := nfVmHWM(t)
	if self < big {
		t.Fatalf("test process VmHWM %d, want at least %d after touching the ballast", self, big)
	}
	here := Target{Do: func(f func() error) error { return f() }} // sleep uses no network
	res, err := runIn(t.Context(), here, nil, "sleep", "0.2")
	if err != nil {
		t.Fatal(err)
	}
	if res.PeakRSS <= 0 || res.PeakRSS > 32<<20 {
		t.Fatalf("child peak RSS %d bytes, want its own (a few MB), not the parent's %d", res.PeakRSS, self)
	}
	t.Logf("child peak RSS %.1f MiB, parent %.1f MiB", float64(res.PeakRSS)/(1<<20), float64(self)/(1<<20))
	_ = ballast[len(ballast)-1]
}
