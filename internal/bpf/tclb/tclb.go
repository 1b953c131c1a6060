// Package tclb is cnibench's per-packet service load balancer in TC
// (issue 11's ebpf-tc-lb): a TCX ingress program on a pod's node-side veth
// DNATs a new flow to a service's VIP to a backend chosen from the
// service's Maglev table and records it in BPF connection maps; a TCX
// egress program on the same device rewrites the replies' source back to
// the VIP. No kernel conntrack or NAT is involved. A pod whose flow lands
// on itself (hairpin) also gets its source rewritten to HairpinAddr, and
// the packets are bounced straight back out the pod's veth.
//
// Load sizes and fills the maps; Attach attaches both programs to a
// device, and can be called for several devices (in one or several
// network namespaces), which then share the maps. The BPF source is tclb.c; the generated tclb_bpfel.{go,o} are
// committed so that building cnibench needs no clang.
package tclb

import (
	"fmt"
	"net/netip"

	"github.com/cnibench/cnibench/internal"
	"github.com/cnibench/cnibench/internal/bpf/mapval"

	"github.com/cnibench/cnibench/internal/maglev"
)

// ErrNotSupported is wrapped by every error that means "this machine
// cannot run the TC load balancer".
var ErrNotSupported = internal.ErrNotSupported

// DefaultMaglevSize is each service's Maglev table size (a prime): with up
// to 25 backends a backend's share of flows stays within a few percent of
// 1/n, and 10,000 services take 10 MB.
const DefaultMaglevSize = 251

// HairpinAddr is the source a pod sees on a flow to its own service that
// the load balancer sent back to the pod itself (169.254.42.1, Cilium's
// IPV4_LOOPBACK). It must not be a VIP or a backend; treat it as a
// constant.
var HairpinAddr = netip.AddrFrom4([4]byte{169, 254, 42, 1})

// Proto is a service's L4 protocol.
type Proto uint8

// The protocols (IP protocol numbers).
const (
	TCP Proto = 6
	UDP Proto = 17
)

// Service is one VIP:port of a protocol and its backends.
type Service struct {
	VIP      netip.AddrPort
	Proto    Proto
	Backends []netip.AddrPort
}

// Counters are the programs' counters, summed over CPUs.
type Counters struct {
	// New counts flows given a backend, Forward packets of known flows
	// rewritten, Reverse replies rewritten back to the VIP, NoBackend
	// service packets dropped for want of a backend, Hairpin the new flows
	// (also in New) whose backend was their own source.
	New, Forward, Reverse, NoBackend, Hairpin uint64
}

// The indexes of the counters map: tclb.c's enum counter_idx (a test
// checks they agree).
const (
	cntNew = iota
	cntForward
	cntReverse
	cntNoBackend
	cntHairpin
	cntMax
)

// countersFrom names the per-index sums read from the counters map.
func countersFrom(c []uint64) Counters {
	return Counters{
		New:       c[cntNew],
		Forward:   c[cntForward],
		Reverse:   c[cntReverse],
		NoBackend: c[cntNoBackend],
		Hairpin:   c[cntHairpin],
	}
}

// svcKey, svcVal and backendVal mirror struct svc_key (../headers/lbpacket.h),
// svc_val (../headers/maglev.h) and tclb.c's struct backend.
type svcKey struct {
	VIP   uint32
	Port  uint16
	Proto uint8
	Pad   uint8
}

type svcVal struct {
	ID    uint32
	Count uint32
}

type backendVal struct {
	Addr uint32
	Port uint16
	Pad  uint16
}

// layout is what Load writes into the maps.
type layout struct {
	keys     []svcKey
	vals     []svcVal
	table    []uint32 // len(services) * m backend ids
	backends []backendVal
}

// entries lays services out for Maglev tables of size m.
func entries(services []Service, m int) (layout, error) {
	var l layout
	if m < 2 {
		return l, fmt.Errorf("maglev size %d: want a prime of at least 2", m)
	}
	ids := map[netip.AddrPort]uint32{}
	type vkey struct {
		vip   netip.AddrPort
		proto Proto
	}
	seen := map[vkey]bool{}
	l.table = make([]uint32, 0, len(services)*m)
	for si, s := range services {
		if !s.VIP.Addr().Is4() || s.VIP.Port() == 0 || (s.Proto != TCP && s.Proto != UDP) {
			return layout{}, fmt.Errorf("service %v: want an IPv4 VIP, a port and TCP or UDP", s.VIP)
		}
		if s.VIP.Addr() == HairpinAddr {
			return layout{}, fmt.Errorf("service %v: the VIP is the hairpin address", s.VIP)
		}
		if seen[vkey{s.VIP, s.Proto}] {
			return layout{}, fmt.Errorf("service %v/%d: listed twice", s.VIP, s.Proto)
		}
		seen[vkey{s.VIP, s.Proto}] = true
		l.keys = append(l.keys, svcKey{VIP: mapval.Addr4(s.VIP.Addr()), Port: mapval.Port(s.VIP.Port()), Proto: uint8(s.Proto)})
		l.vals = append(l.vals, svcVal{ID: uint32(si), Count: uint32(len(s.Backends))})
		row := make([]uint32, m)
		if len(s.Backends) > 0 {
			names := make([]string, len(s.Backends))
			byName := map[string]netip.AddrPort{}
			for i, b := range s.Backends {
				if !b.Addr().Is4() || b.Port() == 0 || b.Addr().IsUnspecified() {
					return layout{}, fmt.Errorf("service %v: backend %v: want an IPv4 address and a port", s.VIP, b)
				}
				// Reserved: hairpinned flows come from it, so a pod
				// could not tell the two apart.
				if b.Addr() == HairpinAddr {
					return layout{}, fmt.Errorf("service %v: backend %v: the hairpin address", s.VIP, b)
				}
				names[i] = b.String()
				byName[names[i]] = b
			}
			tbl, sorted, err := maglev.Table(names, m)
			if err != nil {
				return layout{}, fmt.Errorf("service %v: %w", s.VIP, err)
			}
			for slot, bi := range tbl {
				b := byName[sorted[bi]]
				id, ok := ids[b]
				if !ok {
					id = uint32(len(l.backends))
					ids[b] = id
					l.backends = append(l.backends, backendVal{Addr: mapval.Addr4(b.Addr()), Port: mapval.Port(b.Port())})
				}
				row[slot] = id
			}
		}
		l.table = append(l.table, row...)
	}
	return l, nil
}
