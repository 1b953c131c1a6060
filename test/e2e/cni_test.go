//go:build e2e

package e2e

import (
	"strings"
	"testing"
)

// expect is what the local cluster's CNI (hack/local-cluster/up.sh --cni
// NAME) must show to cnibench: the facts the harness installed, so that a
// check that misreads a real CNI fails here.
type expect struct {
	// cni is cnibench's name for it (the cni label; datapath cni-<cni}).
	cni string
	// mode is the cni_mode label ("" where cnibench reads none).
	mode string
	// policy is the network_policy check's verdict.
	policy string
	// footprint is the cni_footprint verdict; agents its least number of
	// measured pods.
	footprint string
	agents    int
	// clusterPolicy is the egress scenario's mechanism of the CNI's own
	// cluster-wide policy objects ("" if it has none).
	clusterPolicy string
	// cidrSelectsPods: the CNI's CIDR rules (NetworkPolicy ipBlock, its
	// own CIDR policies) select in-cluster pod IPs, which the egress
	// scenario's deny target is by default. Kubernetes leaves it to the
	// CNI; Cilium's do not (they select only addresses outside the
	// cluster's identities), so there the deny would never take effect on
	// a pod target: its servers are outside the cluster (egressOutside).
	cidrSelectsPods bool
	// egressOutside: the egress scenario runs against the local cluster's
	// servers outside the cluster (--egress-denied/--egress-allowed,
	// hack/local-cluster/lib.sh outside_net), where the CNI's CIDR rules
	// take effect.
	egressOutside bool
	// npCutsAllowed are the deny-set sizes at which the CNI's handling of
	// a NetworkPolicy ipBlock with that many excepts also cuts the allowed
	// server outside the cluster for the whole wait (Cilium 1.15 at 1 000:
	// its selector cache takes about four minutes over the 13 218 prefixes
	// it splits the excepts into, longer than the test's 30 s wait;
	// docs/findings.md sections 12d and 16d): recorded with the probes'
	// evidence, no figure.
	npCutsAllowed []string
	// egressOpen, when set, is why the egress scenario is not run on this
	// CNI yet (an open problem, with its evidence in docs/findings.md).
	egressOpen string
	// egressRules are the egress scenario's deny-set sizes ("10,10000" if
	// empty).
	egressRules string
	// own are the CNI-independent parts (the egress scenario's raw
	// mechanisms in a pod of their own); ownServices the services
	// scenario (kube-proxy's: the same on bridge and flannel). Each runs
	// on one CNI only, to keep make e2e brief.
	own, ownServices bool
	// dual: the cluster is dual-stack (IPv4 first); TestDualStackOnCluster
	// runs the suite over both families.
	dual bool
}

// expects are the CNIs hack/local-cluster installs (lib.sh CNIS).
var expects = map[string]expect{
	"bridge":          {cni: "bridge", policy: "not-enforced", footprint: "none", own: true, ownServices: true},
	"bridge-dual":     {cni: "bridge", policy: "not-enforced", footprint: "none", dual: true},
	"flannel-vxlan":   {cni: "flannel", mode: "vxlan", policy: "not-enforced", footprint: "measured", agents: 2},
	"flannel-host-gw": {cni: "flannel", mode: "host-gw", policy: "not-enforced", footprint: "measured", agents: 2},
	"cilium-vxlan": {cni: "cilium", mode: "tunnel vxlan, kube-proxy replacement, eBPF host routing",
		policy: "enforced", footprint: "measured", agents: 3, clusterPolicy: "cilium-policy", ownServices: true, egressRules: "10,1000", egressOutside: true, npCutsAllowed: []string{"1000"}},
	"cilium-native": {cni: "cilium", mode: "native routing, kube-proxy replacement, eBPF host routing",
		policy: "enforced", footprint: "measured", agents: 3, clusterPolicy: "cilium-policy", ownServices: true, egressRules: "10,1000", egressOpen: ciliumNativeEgressOpen},
	"cilium-native-legacy": {cni: "cilium", mode: "native routing, kube-proxy replacement, legacy host routing",
		policy: "enforced", footprint: "measured", agents: 3, clusterPolicy: "cilium-policy", ownServices: true, egressRules: "10,1000", egressOpen: ciliumNativeEgressOpen},
	"cilium-native-kube-proxy": {cni: "cilium", mode: "native routing, kube-proxy, legacy host routing",
		policy: "enforced", footprint: "measured", agents: 3, clusterPolicy: "cilium-policy", egressRules: "10,1000", egressOpen: ciliumNativeEgressOpen},
	// Cilium 1.20.2 (hack/local-cluster/cni/cilium120.sh), the same modes,
	// where two things differ from 1.15 (2026-12-04, docs/findings.md
	// section 12d): the NetworkPolicy with 1 000 excepts cuts nothing (the
	// deny took effect in 424–838 ms and the allowed server lost no
	// probe), so that point is measured like the others; and with native
	// routing the pods reach the servers outside the cluster, so the
	// egress scenario runs there too.
	"cilium120-vxlan": {cni: "cilium", mode: "tunnel vxlan, kube-proxy replacement, eBPF host routing",
		policy: "enforced", footprint: "measured", agents: 3, clusterPolicy: "cilium-policy", ownServices: true, egressRules: "10,1000", egressOutside: true},
	"cilium120-native": {cni: "cilium", mode: "native routing, kube-proxy replacement, eBPF host routing",
		policy: "enforced", footprint: "measured", agents: 3, clusterPolicy: "cilium-policy", ownServices: true, egressRules: "10,1000", egressOutside: true},
	"cilium120-native-legacy": {cni: "cilium", mode: "native routing, kube-proxy replacement, legacy host routing",
		policy: "enforced", footprint: "measured", agents: 3, clusterPolicy: "cilium-policy", ownServices: true, egressRules: "10,1000", egressOutside: true},
	"cilium120-native-kube-proxy": {cni: "cilium", mode: "native routing, kube-proxy, legacy host routing",
		policy: "enforced", footprint: "measured", agents: 3, clusterPolicy: "cilium-policy", egressRules: "10,1000", egressOutside: true},
	// Calico's rules select any address, pods' included; its pods reach
	// the outside masqueraded by the pool's natOutgoing.
	"calico-vxlan": {cni: "calico", mode: "vxlan, iptables dataplane", policy: "enforced", footprint: "measured", agents: 2,
		clusterPolicy: "calico-networkset", cidrSelectsPods: true, egressOutside: true, egressRules: "10,1000"},
	"calico-nftables": {cni: "calico", mode: "vxlan, nftables dataplane", policy: "enforced", footprint: "measured", agents: 2,
		clusterPolicy: "calico-networkset", cidrSelectsPods: true, egressOutside: true, egressRules: "10,1000"},
	// Canal: flannel's VXLAN carries the pods, Calico's felix enforces
	// policy only (NetworkPolicy and Calico's own GlobalNetworkSet and
	// GlobalNetworkPolicy, whose rules select any address, pods' included);
	// one canal pod (calico-node and kube-flannel) per node; canal.yaml sets
	// no felix dataplane (felix's default: iptables in v3.31); its pods reach
	// the outside masqueraded by flanneld's --ip-masq.
	"canal": {cni: "canal", mode: "flannel vxlan, calico policy, felix's default dataplane", policy: "enforced", footprint: "measured", agents: 2,
		clusterPolicy: "calico-networkset", cidrSelectsPods: true, egressOutside: true, egressRules: "10,1000"},
	// BGP between the nodes (BIRD), no encapsulation; with eBPF felix also replaces kube-proxy.
	"calico-bgp": {cni: "calico", mode: "bgp without encapsulation, iptables dataplane", policy: "enforced", footprint: "measured", agents: 2,
		clusterPolicy: "calico-networkset", cidrSelectsPods: true, egressOutside: true, egressRules: "10,1000"},
	"calico-ebpf": {cni: "calico", mode: "bgp without encapsulation, eBPF dataplane", policy: "enforced", footprint: "measured", agents: 2,
		clusterPolicy: "calico-networkset", cidrSelectsPods: true, egressOutside: true, egressRules: "10,1000", ownServices: true},
	// kube-router: a local test fixture only (hack/local-cluster/cni/kube-router.sh).
	"kube-router": {cni: "kube-router", policy: "enforced", footprint: "measured", agents: 2, cidrSelectsPods: true, egressRules: "10,1000"},
}

// ciliumNativeEgressOpen: with Cilium's native routing the client pod
// does not reach the local cluster's outside, where the egress scenario's
// servers are (ping lost, no packet on the node's ext0; Cilium manages
// eth0 only; cause not confirmed). docs/findings.md section 12d.
const ciliumNativeEgressOpen = "with Cilium's native routing the pods do not reach the local cluster's servers outside the cluster, which the egress scenario needs on Cilium (docs/findings.md section 12d)"

// expected is the expectation for the cluster's CNI (CNIBENCH_E2E_EXPECT_CNI).
func (e *env) expected(t *testing.T) expect {
	t.Helper()
	x, ok := expects[e.cni]
	if !ok {
		t.Fatalf("CNIBENCH_E2E_EXPECT_CNI=%q: unknown (want one of hack/local-cluster's CNIs)", e.cni)
	}
	return x
}

// versionMatches reports whether a run's cni_version label is right for
// x: any version on a CNI other than bridge, the one the harness installed
// (CNIBENCH_E2E_EXPECT_CNI_VERSION) when it says.
func (e *env) versionMatches(x expect, got string) bool {
	if x.cni == "bridge" {
		return true
	}
	return got != "" && (e.cniVersion == "" || got == e.cniVersion)
}

// modeMatches reports whether a run's cni_mode label is the expected one.
func (x expect) modeMatches(got string) bool {
	if x.mode == "" {
		return true
	}
	return got == x.mode || strings.HasPrefix(got, x.mode+", ")
}
