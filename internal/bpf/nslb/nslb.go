package nslb

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"

	"github.com/cnibench/cnibench/internal"
	"github.com/cnibench/cnibench/internal/bpf/mapval"
	"github.com/cnibench/cnibench/internal/maglev"
)

// ErrNotSupported is wrapped by every error that means "this machine
// cannot run the L4 load balancer".
var ErrNotSupported = internal.ErrNotSupported

// DefaultMaglevSize is each service's Maglev table size (a prime), as in
// tclb: with up to 25 backends a backend's share stays within a few percent
// of 1/n.
const DefaultMaglevSize = 251

// MaxAllow bounds the firewall's allow list (the LPM trie's size).
const MaxAllow = 64

// Proto is a service's L4 protocol.
type Proto uint8

// The protocols (IP protocol numbers).
const (
	TCP Proto = 6
	UDP Proto = 17
)

// Backend is a backend pod and the worker it runs on.
type Backend struct {
	// Addr is the pod's address and the port it serves the service on.
	Addr netip.AddrPort
	// Node is the worker's address on the external segment: the next hop
	// (direct) or the tunnel's remote end (vxlan).
	Node netip.Addr
	// NodeMAC is the MAC of the worker's VXLAN device, the inner frame's
	// destination (vxlan only).
	NodeMAC net.HardwareAddr
}

// Service is one VIP:port of a protocol and its backends.
type Service struct {
	VIP      netip.AddrPort
	Proto    Proto
	Backends []Backend
}

// Tunnel is the LB's VXLAN device (external/collect_md mode).
type Tunnel struct {
	Ifindex int
	VNI     uint32
	// MAC is the device's MAC, the inner frame's source.
	MAC net.HardwareAddr
}

// LBConfig configures the load-balancer node's programs.
type LBConfig struct {
	Services []Service
	// MaglevSize is each service's table size, a prime (0:
	// DefaultMaglevSize).
	MaglevSize int
	// DSR selects direct server return; otherwise SNAT.
	DSR bool
	// ExtIfindex is the LB's interface on the external segment: where
	// lb_ingress attaches and where packets leave (direct).
	ExtIfindex int
	// SNATAddr is the source of translated packets in snat mode: the LB's
	// address the backends' replies come back to (with VXLAN, its tunnel
	// address, so that they come back through the tunnel).
	SNATAddr netip.Addr
	// Tunnel, if set, selects the vxlan transport.
	Tunnel *Tunnel
	// Firewall is the firewall's initial state (SetFirewall changes it);
	// Allow lists the source prefixes it lets reach the services.
	Firewall bool
	Allow    []netip.Prefix
}

// LocalService is a service's backend on one worker (dsr).
type LocalService struct {
	VIP     netip.AddrPort
	Proto   Proto
	Backend netip.AddrPort
}

// WorkerConfig configures a worker's programs (dsr).
type WorkerConfig struct {
	Services []LocalService
	Firewall bool
	Allow    []netip.Prefix
}

// LBCounters are the LB program's counters, summed over CPUs.
type LBCounters struct {
	// New counts flows given a backend; Forward client->backend packets
	// translated and sent to a worker; Reverse backend->client replies
	// translated back (snat only: in dsr the replies never reach the LB).
	New, Forward, Reverse uint64
	// NoBackend, FirewallDrops and SNATFailures count dropped service
	// packets: no usable backend, a source the firewall refuses, no free
	// SNAT port.
	NoBackend, FirewallDrops, SNATFailures uint64
}

// WorkerCounters are a worker program's counters, summed over CPUs.
type WorkerCounters struct {
	// DNAT counts packets to the VIP DNATed to the local backend, RevNAT
	// replies given the VIP back, FirewallDrops service packets from a
	// refused source.
	DNAT, RevNAT, FirewallDrops uint64
}

// Counter indexes; keep in sync with lb.c and worker.c.
const (
	lbCntNew = iota
	lbCntFwd
	lbCntRev
	lbCntNoBackend
	lbCntFwDrop
	lbCntSNATFail
	lbCntMax
)

const (
	wkCntDNAT = iota
	wkCntRevNAT
	wkCntFwDrop
	wkCntMax
)

// svcKey, svcVal, backendVal, localBe, lpmKey and settingsVal mirror the
// structs of ../headers (svc_key: lbpacket.h, svc_val: maglev.h), nslb.h,
// lb.c and worker.c (the generated lb*/worker* types are the same, but
// only exist on Linux).
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
	Addr    uint32
	Port    uint16
	Pad     uint16
	Node    uint32
	NodeMAC [6]byte
	Pad2    uint16
}

type localBe struct {
	Addr uint32
	Port uint16
	Pad  uint16
}

type lpmKey struct {
	Prefixlen uint32
	Addr      uint32
}

type settingsVal struct {
	Firewall   uint32
	TunnelSMAC [6]byte
	Pad        uint16
}

// lbLayout is what LoadLB writes into the LB's maps.
type lbLayout struct {
	keys     []svcKey
	vals     []svcVal
	table    []uint32 // len(services) * m backend ids
	backends []backendVal
}

func validProto(p Proto) bool { return p == TCP || p == UDP }

// validate checks c and fills its defaults.
func (c *LBConfig) validate() error {
	if c.MaglevSize == 0 {
		c.MaglevSize = DefaultMaglevSize
	}
	if c.ExtIfindex <= 0 {
		return fmt.Errorf("lb config: external interface index %d", c.ExtIfindex)
	}
	if !c.DSR && (!c.SNATAddr.Is4() || c.SNATAddr.IsUnspecified()) {
		return fmt.Errorf("lb config: snat mode needs an IPv4 SNAT address, have %v", c.SNATAddr)
	}
	if t := c.Tunnel; t != nil {
		if t.Ifindex <= 0 || t.VNI >= 1<<24 || len(t.MAC) != 6 {
			return fmt.Errorf("lb config: tunnel: want an interface index, a 24-bit VNI and a 6-byte MAC, have %d, %d, %q", t.Ifindex, t.VNI, t.MAC)
		}
	}
	_, err := allowKeys(c.Allow)
	return err
}

// lbEntries lays services out for Maglev tables of size m; tunnel says
// whether the backends' NodeMAC is needed.
func lbEntries(services []Service, m int, tunnel bool) (lbLayout, error) {
	var l lbLayout
	if m < 2 {
		return l, fmt.Errorf("maglev size %d: want a prime of at least 2", m)
	}
	ids := map[netip.AddrPort]uint32{}
	seen := map[svcKey]bool{}
	l.table = make([]uint32, 0, len(services)*m)
	for si, s := range services {
		if !s.VIP.Addr().Is4() || s.VIP.Port() == 0 || !validProto(s.Proto) {
			return lbLayout{}, fmt.Errorf("service %v: want an IPv4 VIP, a port and TCP or UDP", s.VIP)
		}
		k := svcKey{VIP: mapval.Addr4(s.VIP.Addr()), Port: mapval.Port(s.VIP.Port()), Proto: uint8(s.Proto)}
		if seen[k] {
			return lbLayout{}, fmt.Errorf("service %v/%d: listed twice", s.VIP, s.Proto)
		}
		seen[k] = true
		l.keys = append(l.keys, k)
		l.vals = append(l.vals, svcVal{ID: uint32(si), Count: uint32(len(s.Backends))})
		row := make([]uint32, m)
		if len(s.Backends) > 0 {
			names := make([]string, len(s.Backends))
			byName := map[string]Backend{}
			for i, b := range s.Backends {
				if !b.Addr.Addr().Is4() || b.Addr.Port() == 0 || b.Addr.Addr().IsUnspecified() {
					return lbLayout{}, fmt.Errorf("service %v: backend %v: want an IPv4 address and a port", s.VIP, b.Addr)
				}
				if !b.Node.Is4() || b.Node.IsUnspecified() {
					return lbLayout{}, fmt.Errorf("service %v: backend %v: worker address %v is not IPv4", s.VIP, b.Addr, b.Node)
				}
				if tunnel && len(b.NodeMAC) != 6 {
					return lbLayout{}, fmt.Errorf("service %v: backend %v: vxlan needs the worker's 6-byte VXLAN MAC, have %q", s.VIP, b.Addr, b.NodeMAC)
				}
				if _, dup := byName[b.Addr.String()]; dup {
					return lbLayout{}, fmt.Errorf("service %v: backend %v listed twice", s.VIP, b.Addr)
				}
				names[i] = b.Addr.String()
				byName[names[i]] = b
			}
			tbl, sorted, err := maglev.Table(names, m)
			if err != nil {
				return lbLayout{}, fmt.Errorf("service %v: %w", s.VIP, err)
			}
			for slot, bi := range tbl {
				b := byName[sorted[bi]]
				id, ok := ids[b.Addr]
				if !ok {
					id = uint32(len(l.backends))
					ids[b.Addr] = id
					v := backendVal{
						Addr: mapval.Addr4(b.Addr.Addr()), Port: mapval.Port(b.Addr.Port()),
						Node: mapval.Addr4(b.Node),
					}
					copy(v.NodeMAC[:], b.NodeMAC)
					l.backends = append(l.backends, v)
				} else if l.backends[id].Node != mapval.Addr4(b.Node) {
					return lbLayout{}, fmt.Errorf("backend %v: on two workers", b.Addr)
				}
				row[slot] = id
			}
		}
		l.table = append(l.table, row...)
	}
	return l, nil
}

// workerEntries lays a worker's services out: one local backend each.
func workerEntries(services []LocalService) ([]svcKey, []localBe, error) {
	var keys []svcKey
	var vals []localBe
	seen := map[svcKey]bool{}
	for _, s := range services {
		if !s.VIP.Addr().Is4() || s.VIP.Port() == 0 || !validProto(s.Proto) {
			return nil, nil, fmt.Errorf("service %v: want an IPv4 VIP, a port and TCP or UDP", s.VIP)
		}
		if !s.Backend.Addr().Is4() || s.Backend.Port() == 0 || s.Backend.Addr().IsUnspecified() {
			return nil, nil, fmt.Errorf("service %v: local backend %v: want an IPv4 address and a port", s.VIP, s.Backend)
		}
		k := svcKey{VIP: mapval.Addr4(s.VIP.Addr()), Port: mapval.Port(s.VIP.Port()), Proto: uint8(s.Proto)}
		if seen[k] {
			// L2 DSR keeps the VIP as destination: a worker has nothing to
			// tell two local backends of a service apart by.
			return nil, nil, fmt.Errorf("service %v/%d: more than one local backend (dsr maps the VIP to one backend per worker)", s.VIP, s.Proto)
		}
		seen[k] = true
		keys = append(keys, k)
		vals = append(vals, localBe{Addr: mapval.Addr4(s.Backend.Addr()), Port: mapval.Port(s.Backend.Port())})
	}
	return keys, vals, nil
}

// allowKeys converts the firewall's allow list to LPM trie keys.
func allowKeys(prefixes []netip.Prefix) ([]lpmKey, error) {
	if len(prefixes) > MaxAllow {
		return nil, fmt.Errorf("firewall: %d allowed prefixes, at most %d", len(prefixes), MaxAllow)
	}
	keys := make([]lpmKey, 0, len(prefixes))
	for _, p := range prefixes {
		if !p.IsValid() || !p.Addr().Is4() {
			return nil, fmt.Errorf("firewall: allowed prefix %v is not IPv4", p)
		}
		keys = append(keys, lpmKey{Prefixlen: uint32(p.Bits()), Addr: mapval.Addr4(p.Masked().Addr())})
	}
	return keys, nil
}

// FlowHash is lb.c's flow_hash in Go: the hash whose value modulo the
// Maglev size selects a new flow's slot. Addresses and ports enter as the
// program reads them from the packet (network order in memory).
func FlowHash(src, dst netip.AddrPort, proto Proto) uint32 {
	mix := func(h uint32) uint32 {
		h ^= h >> 16
		h *= 0x85ebca6b
		h ^= h >> 13
		h *= 0xc2b2ae35
		h ^= h >> 16
		return h
	}
	h := mix(mapval.Addr4(src.Addr()) ^ 0x9e3779b9)
	h = mix(h ^ mapval.Addr4(dst.Addr()))
	h = mix(h ^ (uint32(mapval.Port(src.Port()))<<16 | uint32(mapval.Port(dst.Port()))))
	return mix(h ^ uint32(proto))
}

// BackendOf returns the backend lb.c gives a new flow from src to the
// service svc (Maglev size m, 0: DefaultMaglevSize): the same table and
// hash, computed in Go. Tests use it to predict the program's choice.
func BackendOf(svc Service, src netip.AddrPort, m int) (netip.AddrPort, error) {
	if m == 0 {
		m = DefaultMaglevSize
	}
	l, err := lbEntries([]Service{svc}, m, false)
	if err != nil {
		return netip.AddrPort{}, err
	}
	if len(svc.Backends) == 0 {
		return netip.AddrPort{}, fmt.Errorf("service %v: no backends", svc.VIP)
	}
	b := l.backends[l.table[FlowHash(src, svc.VIP, svc.Proto)%uint32(m)]]
	var a [4]byte
	binary.NativeEndian.PutUint32(a[:], b.Addr)
	var p [2]byte
	binary.NativeEndian.PutUint16(p[:], b.Port)
	return netip.AddrPortFrom(netip.AddrFrom4(a), binary.BigEndian.Uint16(p[:])), nil
}
