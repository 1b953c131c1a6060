// Package services is the east-west services scenario (issue 11, seed
// 003 and 000): a ClusterIP with backends on both lab nodes, implemented
// as kube-proxy's iptables NAT, Cilium-style socket-level load balancing
// or per-packet DNAT in TC, measured against the number of services.
//
// This file builds the iptables implementation's rules exactly as
// kube-proxy's iptables mode lays them out (pkg/proxy/iptables/proxier.go):
// KUBE-SERVICES matches each service's VIP and port and jumps to a
// per-service chain, which picks an endpoint chain with
// `-m statistic --mode random` probabilities 1/n, 1/(n-1), …, 1; the
// endpoint chain marks hairpin traffic for masquerade and DNATs. Service
// lookup is a linear scan of KUBE-SERVICES: that is the cost that grows
// with the number of services, and only NEW connections pay it.
package services

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"net/netip"
	"strconv"

	"github.com/cnibench/cnibench/internal/nf"
)

// Service is one ClusterIP service port and its endpoints.
type Service struct {
	// Name is "namespace/name:port", as kube-proxy names a service port
	// (it determines the chain names).
	Name      string
	VIP       netip.Addr
	Port      uint16
	Endpoints []netip.AddrPort
}

// Chain names kube-proxy uses.
const (
	chainServices    = "KUBE-SERVICES"
	chainPostrouting = "KUBE-POSTROUTING"
	chainMarkMasq    = "KUBE-MARK-MASQ"
	masqMark         = "0x4000/0x4000"
)

// chainName is kube-proxy's servicePortChainName/servicePortEndpointChainName:
// prefix plus the first 16 characters of base32(sha256(parts)), since chain
// names are limited to 28 characters.
func chainName(prefix string, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
	}
	enc := base32.StdEncoding.EncodeToString(h.Sum(nil))
	return prefix + enc[:16]
}

// SvcChain and SepChain name a service's chain and one endpoint's chain.
func SvcChain(s Service) string { return chainName("KUBE-SVC-", s.Name, "tcp") }
func SepChain(s Service, ep netip.AddrPort) string {
	return chainName("KUBE-SEP-", s.Name, "tcp", ep.String())
}

// probability is kube-proxy's computeProbability: 1/n with ten decimals.
func probability(n int) string { return fmt.Sprintf("%0.10f", 1.0/float64(n)) }

// KubeProxyRules returns the nat table for svcs in iptables-restore format,
// for `iptables-restore --noflush`: every chain it declares is flushed and
// rewritten, the built-in chains get their jumps appended (the caller
// loads it into a namespace that has none yet). Services must have at
// least one endpoint, IPv4 addresses and a non-zero port.
func KubeProxyRules(svcs []Service) ([]byte, error) {
	var chains, rules nf.LineBuffer
	chains.Write("*nat")
	for _, c := range []string{chainServices, chainPostrouting, chainMarkMasq} {
		chains.Write(":"+c, "-", "[0:0]")
	}
	rules.Write("-A", "PREROUTING", "-m", "comment", "--comment", `"kubernetes service portals"`, "-j", chainServices)
	rules.Write("-A", "OUTPUT", "-m", "comment", "--comment", `"kubernetes service portals"`, "-j", chainServices)
	rules.Write("-A", "POSTROUTING", "-m", "comment", "--comment", `"kubernetes postrouting rules"`, "-j", chainPostrouting)
	rules.Write("-A", chainMarkMasq, "-j", "MARK", "--or-mark", "0x4000")
	rules.Write("-A", chainPostrouting, "-m", "mark", "!", "--mark", masqMark, "-j", "RETURN")
	rules.Write("-A", chainPostrouting, "-j", "MARK", "--xor-mark", "0x4000")
	rules.Write("-A", chainPostrouting, "-m", "comment", "--comment", `"kubernetes service traffic requiring SNAT"`, "-j", "MASQUERADE", "--random-fully")
	for _, s := range svcs {
		if !s.VIP.Is4() || s.Port == 0 || len(s.Endpoints) == 0 {
			return nil, fmt.Errorf("service %q: want an IPv4 VIP, a port and endpoints, got %v:%d with %d endpoints", s.Name, s.VIP, s.Port, len(s.Endpoints))
		}
		svc := SvcChain(s)
		port := strconv.Itoa(int(s.Port))
		comment := strconv.Quote(s.Name + " cluster IP")
		chains.Write(":"+svc, "-", "[0:0]")
		rules.Write("-A", chainServices, "-m", "comment", "--comment", comment, "-m", "tcp", "-p", "tcp",
			"-d", s.VIP.String()+"/32", "--dport", port, "-j", svc)
		n := len(s.Endpoints)
		for i, ep := range s.Endpoints {
			if !ep.Addr().Is4() || ep.Port() == 0 {
				return nil, fmt.Errorf("service %q: endpoint %v: want IPv4 address and port", s.Name, ep)
			}
			sep := SepChain(s, ep)
			chains.Write(":"+sep, "-", "[0:0]")
			epComment := strconv.Quote(s.Name + " -> " + ep.String())
			args := []string{"-A", svc, "-m", "comment", "--comment", epComment}
			if i < n-1 {
				args = append(args, "-m", "statistic", "--mode", "random", "--probability", probability(n-i))
			}
			rules.Write(append(args, "-j", sep)...)
			// Hairpin: an endpoint reaching its own service is masqueraded,
			// or its reply would bypass the DNAT's conntrack entry.
			rules.Write("-A", sep, "-m", "comment", "--comment", strconv.Quote(s.Name), "-s", ep.Addr().String()+"/32", "-j", chainMarkMasq)
			rules.Write("-A", sep, "-m", "comment", "--comment", strconv.Quote(s.Name), "-m", "tcp", "-p", "tcp",
				"-j", "DNAT", "--to-destination", ep.String())
		}
	}
	rules.Write("COMMIT")
	return append(chains.Bytes(), rules.Bytes()...), nil
}
