package cluster

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cnibench/cnibench/internal/kube/agent"
	"github.com/cnibench/cnibench/internal/kube/cni"
	"github.com/cnibench/cnibench/pkg/result"
)

// TestCheckMTUOverheadByCNI: the MTU check expects what the CNI reserves
// for its tunnels over the node's address family.
func TestCheckMTUOverheadByCNI(t *testing.T) {
	node := func(addr string, tun agent.Link) *agent.Inspect {
		links := []agent.Link{{Name: "eth0", Type: "device", MTU: 1500, State: "up", Addrs: []string{addr + "/24"}}, tun}
		return &agent.Inspect{Links: links, Tunnels: agent.Tunnels(links), Addr: addr, AddrLinkName: "eth0"}
	}
	pod := func(mtu int) *agent.Inspect {
		return &agent.Inspect{Links: []agent.Link{{Name: "eth0", Type: "veth", MTU: mtu, State: "up"}}, DefaultRoute: &agent.Route{Dev: "eth0"}}
	}
	wg := agent.Link{Name: "wg0", Type: "wireguard", MTU: 1420, State: "up"}
	vx := agent.Link{Name: "flannel.1", Type: "vxlan", MTU: 1450, State: "up"}
	tests := []struct {
		name     string
		cni      cni.Info
		node     *agent.Inspect
		podMTU   int
		verdict  string
		evidence string
	}{
		{"flannel wireguard reserves 80", cni.Info{Name: "flannel"}, node("10.0.0.1", wg), 1420, "correct", "wireguard 80 (flannel reserves 80 whatever the family) over IPv4"},
		{"calico wireguard over IPv4 is 60", cni.Info{Name: "calico"}, node("10.0.0.1", wg), 1440, "correct", "wireguard 60 over IPv4"},
		{"calico wireguard at 1420 wastes 20", cni.Info{Name: "calico"}, node("10.0.0.1", wg), 1420, "misconfigured", "wireguard 60"},
		{"vxlan over IPv6 is 70", cni.Info{Name: "flannel"}, node("fd00::1", vx), 1430, "correct", "vxlan 70 over IPv6"},
		{"cilium ipsec", cni.Info{Name: "cilium", Settings: map[string]string{"enable-ipsec": "true"}}, node("10.0.0.1", vx), 1373, "correct", "vxlan 50 + ipsec 77"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &Deployment{runID: "r", cni: tt.cni, podIf: pod(tt.podMTU), nodeIf: tt.node,
				client: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}}
			f := d.checkMTU(func(map[string]string) []result.Run { return nil })
			if f.Verdict != tt.verdict {
				t.Errorf("verdict %s (%s), want %s", f.Verdict, f.Summary, tt.verdict)
			}
			if ev := strings.Join(f.Evidence, "\n"); !strings.Contains(ev, tt.evidence) {
				t.Errorf("evidence %q lacks %q", f.Evidence, tt.evidence)
			}
		})
	}
}
