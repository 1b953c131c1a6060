package lbnet

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/lab"
)

// DatapathName is the hidden datapath's registry name.
const DatapathName = "l4lb"

// Load-balancing modes (Mode.LB) and transports (Mode.Transport).
const (
	// SNAT: the LB DNATs to the backend and SNATs to itself; replies
	// come back through it.
	SNAT = "snat"
	// DSR: the client's address is kept and the worker answers the
	// client directly (L2 direct return).
	DSR = "dsr"
	// Direct: the LB hands packets to the worker on the shared segment
	// (next-hop MAC).
	Direct = "direct"
	// VXLAN: the LB encapsulates in VXLAN to the worker.
	VXLAN = "vxlan"
	// KubeProxy: no BPF on the LB: kube-proxy's iptables-mode rules
	// (in nftables) DNAT the VIP to a backend picked at random and
	// masquerade to the LB's address; the kernel's conntrack translates
	// the replies back and the LB's stack forwards (seed 003's test 1).
	KubeProxy = "kubeproxy"
)

// lbModes are the LB modes, in Modes' order.
var lbModes = []string{SNAT, DSR, KubeProxy}

// Mode is the load balancer's configuration (LB.Configure).
type Mode struct {
	LB        string // SNAT, DSR or KubeProxy
	Transport string // Direct or VXLAN
	// Firewall turns the host firewall on: only ClientPrefix reaches
	// the services. It is enforced where the client's address is still
	// visible: at the LB's ingress in snat (the workers only ever see the
	// LB's address), at the workers' ingress in dsr, in the LB's
	// prerouting (an nft rule before DNAT and conntrack) in kubeproxy.
	Firewall bool
	// IPv6 asks for an IPv6 service; the lab cannot build one (Validate).
	IPv6 bool
}

// Modes lists every IPv4 mode, snat before dsr before kubeproxy,
// direct before vxlan, firewall off before on.
func Modes() []Mode {
	var out []Mode
	for _, lb := range lbModes {
		for _, tr := range []string{Direct, VXLAN} {
			for _, fw := range []bool{false, true} {
				out = append(out, Mode{LB: lb, Transport: tr, Firewall: fw})
			}
		}
	}
	return out
}

// Validate checks m. An IPv6 mode is an error wrapping lab.ErrNotSupported
// (the caller records it as skipped).
func (m Mode) Validate() error {
	if !slices.Contains(lbModes, m.LB) {
		return fmt.Errorf("l4lb mode %q: want %s, %s or %s", m.LB, SNAT, DSR, KubeProxy)
	}
	if m.Transport != Direct && m.Transport != VXLAN {
		return fmt.Errorf("l4lb transport %q: want %s or %s", m.Transport, Direct, VXLAN)
	}
	if m.IPv6 {
		return &lab.UnsupportedError{
			Feature: "IPv6 l4lb service",
			Reason:  "the lab disables IPv6 in every namespace it creates (Env.NewNS), so no IPv6 VIP, address or route exists",
		}
	}
	return nil
}

// String is the mode's label: LB-TRANSPORT, then "-fw" with the firewall
// and "-ipv6" for IPv6, e.g. "dsr-vxlan-fw". ParseMode reads it back.
func (m Mode) String() string {
	s := m.LB + "-" + m.Transport
	if m.Firewall {
		s += "-fw"
	}
	if m.IPv6 {
		s += "-ipv6"
	}
	return s
}

// ParseMode parses a mode label (String's form). It checks the syntax
// and the names; Validate says whether the lab can run it.
func ParseMode(s string) (Mode, error) {
	parts := strings.Split(s, "-")
	if len(parts) < 2 || len(parts) > 4 {
		return Mode{}, fmt.Errorf("l4lb mode %q: want LB-TRANSPORT[-fw][-ipv6], e.g. dsr-vxlan-fw", s)
	}
	m := Mode{LB: parts[0], Transport: parts[1]}
	rest := parts[2:]
	if len(rest) > 0 && rest[0] == "fw" {
		m.Firewall, rest = true, rest[1:]
	}
	if len(rest) > 0 && rest[0] == "ipv6" {
		m.IPv6, rest = true, rest[1:]
	}
	if len(rest) > 0 {
		return Mode{}, fmt.Errorf("l4lb mode %q: unknown part %q (want fw, then ipv6)", s, rest[0])
	}
	v := m
	v.IPv6 = false // only the names are checked here
	if err := v.Validate(); err != nil {
		return Mode{}, fmt.Errorf("l4lb mode %q: %w", s, err)
	}
	return m, nil
}

// PacketPath describes, for reports, what a client's packet and its reply
// cross in mode m.
func (m Mode) PacketPath() string {
	fw := ""
	if m.Firewall {
		fw = " (firewall: allow list)"
	}
	var fwd, back string
	switch {
	case m.LB == KubeProxy && m.Transport == Direct:
		fwd = "client ext0 -> switch -> lb ext0 -> nft prerouting" + fw + " -> conntrack -> nat prerouting (kube-proxy chains: random endpoint, mark, DNAT) -> IP forward -> nat postrouting (masquerade) -> ext0 -> switch -> worker ext0 -> IP stack -> veth -> backend pod"
		back = "backend -> worker IP stack -> ext0 -> switch -> lb ext0 -> conntrack (un-masquerade) -> IP forward -> conntrack (un-DNAT: source back to the VIP) -> ext0 -> switch -> client"
	case m.LB == KubeProxy:
		fwd = "client ext0 -> switch -> lb ext0 -> nft prerouting" + fw + " -> conntrack -> nat prerouting (kube-proxy chains: random endpoint, mark, DNAT) -> IP forward (route via the worker's tunnel address) -> nat postrouting (masquerade to the LB's tunnel address) -> lb vxlan0 (encap) -> ext0 -> switch -> worker ext0 -> vxlan0 (decap) -> IP stack -> veth -> backend pod"
		back = "backend -> worker IP stack -> vxlan0 (encap) -> ext0 -> switch -> lb ext0 -> vxlan0 (decap) -> conntrack (un-masquerade) -> IP forward -> conntrack (un-DNAT) -> ext0 -> switch -> client"
	case m.LB == SNAT && m.Transport == Direct:
		fwd = "client ext0 -> switch -> lb ext0 TCX ingress BPF" + fw + " (Maglev, ct, DNAT+SNAT, redirect_neigh) -> switch -> worker ext0 -> IP stack -> veth -> backend pod"
		back = "backend -> worker IP stack -> ext0 -> switch -> lb ext0 TCX ingress BPF (reverse NAT, redirect_neigh) -> switch -> client"
	case m.LB == SNAT:
		fwd = "client ext0 -> switch -> lb ext0 TCX ingress BPF" + fw + " (Maglev, ct, DNAT+SNAT, tunnel key, redirect) -> lb vxlan0 (encap) -> ext0 -> switch -> worker ext0 -> vxlan0 (decap) -> IP stack -> veth -> backend pod"
		back = "backend -> worker IP stack -> vxlan0 (encap) -> ext0 -> switch -> lb ext0 -> vxlan0 (decap) TCX ingress BPF (reverse NAT, redirect_neigh) -> ext0 -> switch -> client"
	case m.Transport == Direct:
		fwd = "client ext0 -> switch -> lb ext0 TCX ingress BPF (Maglev, ct, next hop = worker, redirect_neigh) -> switch -> worker ext0 TCX ingress BPF" + fw + " (DNAT VIP -> local backend) -> IP stack -> veth -> backend pod"
		back = "backend -> worker veth TCX ingress BPF (source back to the VIP) -> IP stack -> ext0 -> switch -> client (the LB never sees it)"
	default:
		fwd = "client ext0 -> switch -> lb ext0 TCX ingress BPF (Maglev, ct, tunnel key, redirect) -> lb vxlan0 (encap) -> ext0 -> switch -> worker ext0 -> vxlan0 (decap) TCX ingress BPF" + fw + " (DNAT VIP -> local backend) -> IP stack -> veth -> backend pod"
		back = "backend -> worker veth TCX ingress BPF (source back to the VIP) -> IP stack -> ext0 -> switch -> client (not tunnelled; the LB never sees it)"
	}
	return fwd + "; reply: " + back
}

// Addressing of the l4lb lab. The external segment is one /22 shared by
// the clients, the LB and the workers; the two clients are in different
// /24s so that the firewall can tell them apart by prefix. The VIPs and
// the tunnel addresses are outside it.
var (
	ExtNet         = netip.MustParsePrefix("198.18.64.0/22")
	ClientIP       = netip.MustParseAddr("198.18.64.10")
	ClientPrefix   = netip.MustParsePrefix("198.18.64.0/24")
	ClientFWIP     = netip.MustParseAddr("198.18.65.10")
	ClientFWPrefix = netip.MustParsePrefix("198.18.65.0/24")
	NodeIP         = netip.MustParseAddr("198.18.67.1")
	WorkerIPs      = [2]netip.Addr{netip.MustParseAddr("198.18.67.11"), netip.MustParseAddr("198.18.67.12")}
	// VIPNet is routed by the clients to the LB; VIP is the
	// service address.
	VIPNet = netip.MustParsePrefix("198.18.68.0/24")
	VIP    = netip.MustParseAddr("198.18.68.1")
	// TunnelNet holds the VXLAN devices' addresses (vxlan transport);
	// the LB's is its SNAT source in snat+vxlan, so that the backends'
	// replies return through the tunnel.
	TunnelNet     = netip.MustParsePrefix("198.18.69.0/24")
	TunnelIP      = netip.MustParseAddr("198.18.69.1")
	WorkerTunIPs  = [2]netip.Addr{netip.MustParseAddr("198.18.69.11"), netip.MustParseAddr("198.18.69.12")}
	BackendIPs    = [2]netip.Addr{netip.MustParseAddr("198.19.1.10"), netip.MustParseAddr("198.19.2.10")}
	Ports         = []uint16{Port, 8080, 12871}
	allowPrefixes = []netip.Prefix{ClientPrefix}
)

// Port is the service port tests and RefusalProbe use; Ports are
// every TCP port the VIP serves (80, the services scenario's HTTP port
// 8080 and the engine's service-mode port 12871), each to the same port on
// the backends.
const Port = 80

// VNI is the VXLAN network identifier between the LB and the workers.
const VNI = 42

// Roles of the l4lb lab's namespaces.
const (
	RoleSwitch   = "switch"
	RoleClient   = "client"
	RoleClientFW = "clientfw"
	RoleLB       = "lb"
)

// WorkerRoles and BackendRoles name the workers and their backend
// pods (backend i runs on worker i).
var (
	WorkerRoles  = [2]string{"worker1", "worker2"}
	BackendRoles = [2]string{"be1", "be2"}
)

// Counters are the l4lb lab's counters (of the programs of the current
// LB mode and transport: Configure with another mode or transport starts
// them again from 0).
type Counters struct {
	// Forward counts client->backend packets the LB translated and sent to
	// a worker; Reverse backend->client replies the LB translated back
	// (snat and kubeproxy: it stays 0 in dsr, where replies bypass the
	// LB). In kubeproxy they are the LB's forward-chain counters of
	// packets to and from the pods.
	Forward, Reverse uint64
	// NewFlows counts flows the LB gave a backend; NoBackend and
	// SNATFailures service packets it dropped for want of a backend or of
	// a free SNAT port.
	NewFlows, NoBackend, SNATFailures uint64
	// WorkerDNAT and WorkerRevNAT are the workers' dsr translations
	// (VIP -> backend, backend -> VIP), summed over both workers.
	WorkerDNAT, WorkerRevNAT uint64
	// FirewallDrops counts service packets the firewall dropped, wherever
	// it is enforced (LB in snat and kubeproxy, workers in dsr).
	FirewallDrops uint64
	// KubeProxyDNAT counts the packets the kube-proxy rules DNATed
	// (kubeproxy only): the first packet of each connection, as NAT rules
	// see only those; KubeProxyMasq those they marked for masquerade
	// that the postrouting rule masqueraded.
	KubeProxyDNAT, KubeProxyMasq uint64
}

// RefusalResult is what RefusalProbe measured from the refused client.
type RefusalResult struct {
	// Attempts is the number of connects started; Connected completed a
	// handshake, Reset were answered with a RST (something answered: not
	// the firewall), TimedOut got no answer.
	Attempts, Connected, Reset, TimedOut int
	// Drops is the rise of the firewall's drop counter during the probe.
	Drops uint64
	// Duration is how long the probe ran.
	Duration time.Duration
}

// CPUSplit places the l4lb lab's receive processing with RPS (receive
// packet steering, /sys/class/net/DEV/queues/rx-*/rps_cpus): with On,
// every packet a device of the LB node receives is processed on CPU LB,
// every packet a device of any other member (clients, switch, workers,
// backends) receives on CPU Others. Off writes 0 (no steering: a veth's
// packet is processed on the CPU that sent it). It moves softirq work
// only: processes stay where the scheduler or their pinning puts them.
type CPUSplit struct {
	On         bool
	LB, Others int
}

// SYNFloodResult is what SYNFlood sent from the refused client.
type SYNFloodResult struct {
	// Rate is the asked rate (SYN/s); Sent the SYNs the raw socket
	// accepted; SendErrors the sends it refused (e.g. ENOBUFS).
	Rate             int
	Sent, SendErrors uint64
	// Duration is how long the sender ran.
	Duration time.Duration
}

// Achieved is the measured send rate, SYN/s (0 without a duration).
func (r SYNFloodResult) Achieved() float64 {
	if r.Duration <= 0 {
		return 0
	}
	return float64(r.Sent) / r.Duration.Seconds()
}

// SoftnetCPU is one CPU's line of /proc/net/softnet_stat.
type SoftnetCPU struct {
	// CPU is the line's CPU (its last column on kernels that print it,
	// else the line's index); Processed the packets received on it (every
	// device's, in any namespace: the file is per host); ReceivedRPS the
	// RPS interrupts it took.
	CPU                    int
	Processed, ReceivedRPS uint64
}

// ParseSoftnetStat parses /proc/net/softnet_stat: one line of
// hexadecimal columns per online CPU (processed, dropped, time_squeeze,
// 5 unused, cpu_collision, received_rps, flow_limit_count, and on recent
// kernels backlog length and CPU index).
func ParseSoftnetStat(text string) ([]SoftnetCPU, error) {
	var out []SoftnetCPU
	for i, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 10 {
			return nil, fmt.Errorf("softnet_stat line %d: %d columns, want at least 10", i+1, len(f))
		}
		var v [13]uint64
		for j := 0; j < len(f) && j < len(v); j++ {
			n, err := strconv.ParseUint(f[j], 16, 64)
			if err != nil {
				return nil, fmt.Errorf("softnet_stat line %d column %d: %q is not hexadecimal", i+1, j+1, f[j])
			}
			v[j] = n
		}
		c := SoftnetCPU{CPU: i, Processed: v[0], ReceivedRPS: v[9]}
		if len(f) >= 13 {
			c.CPU = int(v[12])
		}
		out = append(out, c)
	}
	return out, nil
}
