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
	// scenario's deny target is. Kubernetes leaves it to the CNI; Cilium's
	// do not (they select only addresses outside the cluster's identities),
	// so there the scenario's deny never takes effect on its pod target and
	// its allow-all-but CIDR rule cuts the allowed pod too: recorded with
	// the probes' evidence, no figure.
	cidrSelectsPods bool
	// egressRules are the egress scenario's deny-set sizes ("10,10000" if
	// empty).
	egressRules string
	// egressOpen, when set, is why the egress scenario is not run on this
	// CNI yet (an open problem, with its evidence in docs/findings.md).
	egressOpen string
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
		policy: "enforced", footprint: "measured", agents: 3, clusterPolicy: "cilium-policy", ownServices: true, egressRules: "10,1000", egressOpen: ciliumEgressOpen},
	"cilium-native": {cni: "cilium", mode: "native routing, kube-proxy replacement, eBPF host routing",
		policy: "enforced", footprint: "measured", agents: 3, clusterPolicy: "cilium-policy", ownServices: true, egressRules: "10,1000", egressOpen: ciliumEgressOpen},
	"cilium-native-legacy": {cni: "cilium", mode: "native routing, kube-proxy replacement, legacy host routing",
		policy: "enforced", footprint: "measured", agents: 3, clusterPolicy: "cilium-policy", ownServices: true, egressRules: "10,1000", egressOpen: ciliumEgressOpen},
	"cilium-native-kube-proxy": {cni: "cilium", mode: "native routing, kube-proxy, legacy host routing",
		policy: "enforced", footprint: "measured", agents: 3, clusterPolicy: "cilium-policy", egressRules: "10,1000", egressOpen: ciliumEgressOpen},
}

// ciliumEgressOpen: on Cilium 1.15 the scenario's deny never takes effect
// on its pod target (its CIDR rules do not select cluster endpoints), and
// after its points the run's pods stayed in deletion past the clean-up's
// deadline (namespace controller: "unexpected items still remain … pods"),
// cause not found yet. docs/findings.md section 12.
const ciliumEgressOpen = "the egress scenario on Cilium is an open problem: its CIDR deny does not select the pod target, and the run's pods outlive the clean-up deadline afterwards (docs/findings.md section 12)"

// expected is the expectation for the cluster's CNI (CNIBENCH_E2E_EXPECT_CNI).
func (e *env) expected(t *testing.T) expect {
	t.Helper()
	x, ok := expects[e.cni]
	if !ok {
		t.Fatalf("CNIBENCH_E2E_EXPECT_CNI=%q: unknown (want one of hack/local-cluster's CNIs)", e.cni)
	}
	return x
}

// modeMatches reports whether a run's cni_mode label is the expected one.
func (x expect) modeMatches(got string) bool {
	if x.mode == "" {
		return true
	}
	return got == x.mode || strings.HasPrefix(got, x.mode+", ")
}
