//go:build linux && (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64)

package cidrfilter

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/cnibench/cnibench/internal/nsrun"
	"github.com/cnibench/cnibench/internal/testutil"
)

// Program return codes (TC_ACT_SHOT, TCX_NEXT).
const (
	retShot = 2
	retNext = 0xffffffff
)

// testCIDRs returns n non-overlapping prefixes in 240.0.0.0/4 of mixed
// lengths (/20 ... /32), one per /20 slot at the slot's start, and for each
// an address inside it and one in the same slot outside it (or the zero
// Addr for a /20, which fills its slot).
func testCIDRs(tb testing.TB, n int) (cidrs []netip.Prefix, in, out []netip.Addr) {
	tb.Helper()
	if n > 1<<16 {
		tb.Fatalf("testCIDRs: n %d > %d slots", n, 1<<16)
	}
	lens := []int{32, 24, 28, 20, 31, 26, 30, 22, 25, 32, 27, 29}
	for i := range n {
		base := uint32(240)<<24 | uint32(i)<<12
		l := lens[i%len(lens)]
		size := uint32(1) << (32 - l)
		cidrs = append(cidrs, netip.PrefixFrom(addr4(base), l))
		in = append(in, addr4(base+size-1))
		if l > 20 {
			out = append(out, addr4(base+size+(uint32(i)%7)))
		} else {
			out = append(out, netip.Addr{})
		}
	}
	return cidrs, in, out
}

func addr4(v uint32) netip.Addr {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b)
}

// packet is an Ethernet + IPv4 + UDP frame to dst.
func packet(dst netip.Addr) []byte {
	p := make([]byte, 14+20+8+4)
	binary.BigEndian.PutUint16(p[12:], 0x0800)
	ip := p[14:]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], 20+8+4)
	ip[8] = 64
	ip[9] = 17
	copy(ip[12:16], []byte{10, 231, 1, 2})
	d := dst.As4()
	copy(ip[16:20], d[:])
	return p
}

func run(t *testing.T, f *Filter, dst netip.Addr) uint32 {
	t.Helper()
	ret, err := f.prog.Run(&ebpf.RunOptions{Data: packet(dst)})
	if err != nil {
		t.Fatalf("test-run program for %s: %v", dst, err)
	}
	return ret
}

func loadOrSkip(t *testing.T, k Kind, cidrs []netip.Prefix, batch int) (*Filter, LoadStats) {
	t.Helper()
	testutil.SkipUnlessRoot(t)
	f, st, err := Load(context.Background(), k, cidrs, batch)
	testutil.SkipIfNotSupported(t, err, ErrNotSupported)
	t.Cleanup(func() { f.Close() })
	return f, st
}

// TestLookup runs the program (BPF_PROG_TEST_RUN) on packets to addresses
// inside and outside every loaded CIDR, and after Add and Remove.
func TestLookup(t *testing.T) {
	for _, k := range []Kind{KindLPM, KindHash} {
		for _, n := range []int{10, 10000} {
			t.Run(fmt.Sprintf("%v/N=%d", k, n), func(t *testing.T) {
				cidrs, in, out := testCIDRs(t, n)
				f, st := loadOrSkip(t, k, cidrs, 4096)
				if want := (n + 4095) / 4096; st.Batches != want {
					t.Errorf("Batches = %d, want %d", st.Batches, want)
				}
				if f.Rules() != n {
					t.Errorf("Rules = %d, want %d", f.Rules(), n)
				}
				var drops uint64
				for i := range cidrs {
					if got := run(t, f, in[i]); got != retShot {
						t.Fatalf("%s in %s: return %#x, want TC_ACT_SHOT", in[i], cidrs[i], got)
					}
					drops++
					if out[i].IsValid() {
						if got := run(t, f, out[i]); got != retNext {
							t.Fatalf("%s (outside %s): return %#x, want TCX_NEXT", out[i], cidrs[i], got)
						}
					}
				}
				// Add a /23 in a free slot, then remove it; for the hash
				// this is a length not present before.
				extra := netip.MustParsePrefix("247.255.0.0/23")
				probe := netip.MustParseAddr("247.255.1.9")
				if got := run(t, f, probe); got != retNext {
					t.Fatalf("%s before Add: return %#x", probe, got)
				}
				if err := f.Add(extra); err != nil {
					t.Fatal(err)
				}
				if err := f.Add(extra); err != nil { // idempotent
					t.Fatal(err)
				}
				if f.Rules() != n+1 {
					t.Errorf("Rules after Add = %d, want %d", f.Rules(), n+1)
				}
				if got := run(t, f, probe); got != retShot {
					t.Fatalf("%s after Add %s: return %#x", probe, extra, got)
				}
				drops++
				if err := f.Remove(extra); err != nil {
					t.Fatal(err)
				}
				if got := run(t, f, probe); got != retNext {
					t.Fatalf("%s after Remove: return %#x", probe, got)
				}
				if err := f.Remove(extra); err == nil {
					t.Error("second Remove: no error")
				}
				if k == KindHash {
					var v hashLens
					if err := f.lens.Lookup(uint32(0), &v); err != nil {
						t.Fatal(err)
					}
					want := Lengths(cidrs)
					got := make([]int, v.N)
					for i := range got {
						got[i] = int(v.Len[i])
					}
					if !slices.Equal(got, want) {
						t.Errorf("hash_lens = %v, want %v", got, want)
					}
				}
				// Non-IPv4 is passed unchecked.
				arp := make([]byte, 64)
				binary.BigEndian.PutUint16(arp[12:], 0x0806)
				if ret, err := f.prog.Run(&ebpf.RunOptions{Data: arp}); err != nil || ret != retNext {
					t.Fatalf("ARP frame: return %#x, %v", ret, err)
				}
				c, err := f.Counters()
				if err != nil {
					t.Fatal(err)
				}
				if c.Dropped != drops || c.NotIPv4 != 1 {
					t.Errorf("Counters = %+v, want Dropped %d, NotIPv4 1", c, drops)
				}
				kb, err := f.KernelBytes()
				if err != nil || kb <= 0 {
					t.Errorf("KernelBytes = %d, %v", kb, err)
				}
				t.Logf("%v N=%d: kernel map memory %d bytes, max_entries %d", k, n, kb, st.MaxEntries)
			})
		}
	}
}

func TestLoadRejects(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	for name, cidrs := range map[string][]netip.Prefix{
		"ipv6":      {netip.MustParsePrefix("2001:db8::/32")},
		"duplicate": {netip.MustParsePrefix("240.0.0.0/24"), netip.MustParsePrefix("240.0.0.0/24")},
	} {
		for _, k := range []Kind{KindLPM, KindHash} {
			f, _, err := Load(context.Background(), k, cidrs, 0)
			if err == nil {
				f.Close()
				t.Errorf("%s %v: Load succeeded", name, k)
				continue
			}
			t.Logf("%s %v: %v", name, k, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cidrs, _, _ := testCIDRs(t, 10)
	if f, _, err := Load(ctx, KindHash, cidrs, 0); !errors.Is(err, context.Canceled) {
		if f != nil {
			f.Close()
		}
		t.Errorf("Load with cancelled ctx: %v, want context.Canceled", err)
	}
}

// TestCloseFreesEverything attaches on the loopback of a scratch namespace
// and checks that Close leaves no program, map or link behind.
func TestCloseFreesEverything(t *testing.T) {
	for _, k := range []Kind{KindLPM, KindHash} {
		t.Run(k.String(), func(t *testing.T) {
			testutil.SkipUnlessRoot(t)
			testutil.SkipIfNotSupported(t, Probe(k), ErrNotSupported)
			cidrs, _, _ := testCIDRs(t, 10)
			f, _ := loadOrSkip(t, k, cidrs, 0)
			var prog ebpf.ProgramID
			var maps []ebpf.MapID
			var lid link.ID
			err := nsrun.Scratch(func() error {
				if err := f.AttachIngress(nil, "lo"); err != nil {
					return err
				}
				var err error
				prog, maps, lid, err = f.IDs()
				if err != nil {
					return err
				}
				return f.Close()
			})
			if err != nil {
				t.Fatal(err)
			}
			if prog == 0 || lid == 0 || len(maps) == 0 {
				t.Fatalf("IDs: prog %d, link %d, maps %v", prog, lid, maps)
			}
			if p, err := ebpf.NewProgramFromID(prog); err == nil {
				p.Close()
				t.Errorf("program %d still exists after Close", prog)
			}
			// The program releases its maps after an RCU grace period.
			for _, id := range maps {
				if err := waitGone(func() error {
					m, err := ebpf.NewMapFromID(id)
					if err == nil {
						m.Close()
					}
					return err
				}); err != nil {
					t.Errorf("map %d: %v", id, err)
				}
			}
			if l, err := link.NewFromID(lid); err == nil {
				l.Close()
				t.Errorf("link %d still exists after Close", lid)
			}
			if err := f.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
		})
	}
}

// waitGone polls open (an open-by-ID) until it fails with ENOENT, for up
// to 5 s.
func waitGone(open func() error) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := open()
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("still exists 5 s after Close (open: %v)", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
