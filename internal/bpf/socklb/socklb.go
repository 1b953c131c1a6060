// Package socklb is cnibench's socket-level service load balancer (issue
// 11's ebpf-socket-lb, modelled on Cilium's bpf_sock.c): four cgroup
// sock_addr programs rewrite a service's VIP:port to a backend when a
// socket connects (TCP, connected UDP) or sends (unconnected UDP), and the
// backend back to the VIP when the application asks who it talks to
// (getpeername) or who sent a datagram (recvmsg). The kernel then never
// sees the VIP: no DNAT, no conntrack entry, no per-packet work.
//
// Load sizes and fills the maps for a set of services; Attach attaches the
// programs to a cgroup v2 directory, so they act on the processes in it.
// The BPF source is socklb.c; the generated socklb_bpfel.{go,o} are
// committed so that building cnibench needs no clang.
package socklb

import (
	"fmt"
	"net/netip"

	"github.com/cnibench/cnibench/internal"
	"github.com/cnibench/cnibench/internal/bpf/mapval"
)

// ErrNotSupported is wrapped by every error that means "this machine
// cannot run the socket load balancer" (program type, map type, cgroup v2).
var ErrNotSupported = internal.ErrNotSupported

// MaxBackends is the most backends one service can have (MAX_BACKENDS in
// socklb.c).
const MaxBackends = 64

// Service is one VIP:port and its backends.
type Service struct {
	VIP      netip.AddrPort
	Backends []netip.AddrPort
}

// Counters are the programs' counters, summed over CPUs.
type Counters struct {
	// Forward counts destinations rewritten from a VIP to a backend,
	// Reverse backends rewritten back (recvmsg, getpeername), NoBackend
	// calls refused because a service had no backend.
	Forward, Reverse, NoBackend uint64
}

// Indexes of the `counters` map; keep in sync with enum counter_idx.
const (
	cntForward = iota
	cntReverse
	cntNoBackend
	cntMax
)

// svcKey and svcVal mirror struct svc_key / svc_val: slot 0 of a service
// holds its backend count, slots 1..count its backend ids.
type svcKey struct {
	VIP  uint32 // the address's bytes as they lie in memory (network order)
	Port uint16 // network order
	Slot uint16
}

type svcVal struct {
	Count   uint32
	Backend uint32
}

// backendVal mirrors struct backend.
type backendVal struct {
	Addr uint32
	Port uint16
	Pad  uint16
}

// entries lays services out as the maps hold them: every service's slot
// entries and the backend table (backend ids are indexes into it, one per
// distinct backend). It validates the services.
func entries(services []Service) (keys []svcKey, vals []svcVal, backends []backendVal, err error) {
	ids := map[netip.AddrPort]uint32{}
	seen := map[netip.AddrPort]bool{}
	for _, s := range services {
		if !s.VIP.Addr().Is4() || s.VIP.Port() == 0 {
			return nil, nil, nil, fmt.Errorf("service %v: want an IPv4 VIP and a port", s.VIP)
		}
		if seen[s.VIP] {
			return nil, nil, nil, fmt.Errorf("service %v: listed twice", s.VIP)
		}
		seen[s.VIP] = true
		if len(s.Backends) > MaxBackends {
			return nil, nil, nil, fmt.Errorf("service %v: %d backends, at most %d", s.VIP, len(s.Backends), MaxBackends)
		}
		k := svcKey{VIP: mapval.Addr4(s.VIP.Addr()), Port: mapval.Port(s.VIP.Port())}
		keys, vals = append(keys, k), append(vals, svcVal{Count: uint32(len(s.Backends))})
		for i, b := range s.Backends {
			if !b.Addr().Is4() || b.Port() == 0 || b.Addr().IsUnspecified() {
				return nil, nil, nil, fmt.Errorf("service %v: backend %v: want an IPv4 address and a port", s.VIP, b)
			}
			id, ok := ids[b]
			if !ok {
				id = uint32(len(backends))
				ids[b] = id
				backends = append(backends, backendVal{Addr: mapval.Addr4(b.Addr()), Port: mapval.Port(b.Port())})
			}
			k.Slot = uint16(i + 1)
			keys, vals = append(keys, k), append(vals, svcVal{Backend: id})
		}
	}
	return keys, vals, backends, nil
}
