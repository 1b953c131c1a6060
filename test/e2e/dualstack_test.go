//go:build e2e

package e2e

import (
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/pkg/result"
)

// TestDualStackOnCluster runs the suite with --ip-family dual on the
// dual-stack local cluster (hack/local-cluster up.sh --cni bridge-dual:
// IPv4 and IPv6 nodes, pods and services): every pod-network path is
// measured over each family, the IPv6 ones with the "-ipv6" suffix and
// their servers' IPv6 addresses, the services dual-stack; the node-to-node
// baseline in the first family; nothing left behind.
func TestDualStackOnCluster(t *testing.T) {
	e := setup(t)
	x := e.expected(t)
	if !x.dual {
		t.Skipf("%s is single-stack (dual-stack: make e2e CNI=bridge-dual)", e.cni)
	}
	e.assertClean(t, "before the run")
	out := filepath.Join(e.out, "dual")
	// One repeat of rr and crr (later flags override suiteArgs'): each
	// family's paths, and the services' connection set-up through
	// kube-proxy's IPv6 rules, brief enough for make e2e.
	args := e.suiteArgs(out, "--tests", "tcp_rr,tcp_crr", "--repeat", "1", "--ip-family", "dual", "--checks", "none")
	set := runSuite(t, e.bin, out, args)
	for _, s := range set.Skipped {
		t.Logf("skipped %v: %s", s.Labels, s.Reason)
	}
	cniDP := "cni-" + x.cni
	paths := []string{"same-node", "cross-node", "pod-to-endpoint", "pod-to-service", "hairpin", "pod-to-nodeport"}
	for _, fam := range []string{"ipv4", "ipv6"} {
		for _, p := range paths {
			path := p
			if fam == "ipv6" {
				path += "-ipv6"
			}
			for _, test := range []string{"tcp_rr", "tcp_crr"} {
				runs := set.Find(map[string]string{"datapath": cniDP, "path": path, "test": test, "backend": "kubernetes"})
				if len(runs) != 1 {
					t.Errorf("%s %s: %d runs, want 1", path, test, len(runs))
					continue
				}
				r := runs[0]
				if s, ok := r.Summary[result.TransPerSec]; !ok || s.N != 1 || s.Median <= 0 {
					t.Errorf("%s %s: trans/s summary %+v (errors: %v)", path, test, s, repeatErrors(r))
				}
				if r.Labels["ip_family"] != fam {
					t.Errorf("%s %s: ip_family %q, want %s", path, test, r.Labels["ip_family"], fam)
				}
				if addr := serverAddr(r); !addr.IsValid() || addr.Is6() != (fam == "ipv6") {
					t.Errorf("%s %s: measured to %v, not an %s address (config %v)", path, test, addr, fam, r.Config)
				}
			}
		}
	}
	if runs := set.Find(map[string]string{"datapath": "baseline", "path": "node-to-node", "test": "tcp_rr"}); len(runs) != 1 || runs[0].Labels["ip_family"] == "ipv6" {
		t.Errorf("baseline: %d runs, want 1 in the first family", len(runs))
	}
	e.assertClean(t, "after the run")
}

// serverAddr is the address a run's client measured to, from its
// configuration's target_ip, target or service (the zero Addr if none is
// recorded).
func serverAddr(r result.Run) netip.Addr {
	for _, k := range []string{"target_ip", "target", "service"} {
		v := r.Config[k]
		if v == "" {
			continue
		}
		if ap, err := netip.ParseAddrPort(v); err == nil {
			return ap.Addr()
		}
		if a, err := netip.ParseAddr(strings.Trim(v, "[]")); err == nil {
			return a
		}
	}
	return netip.Addr{}
}
