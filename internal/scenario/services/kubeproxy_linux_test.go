package services

import (
	"bytes"
	"net/netip"
	"os/exec"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/cnibench/cnibench/internal/testutil"
	"github.com/cnibench/cnibench/internal/testutil/nstest"
)

// TestKubeProxyRulesLoadAndBalance loads the generated rules with
// iptables-nft-restore in a scratch namespace holding three endpoint
// addresses on its loopback, connects to the VIP 300 times from inside
// (the OUTPUT chain's DNAT; nothing listens on the VIP, so a round trip
// works only through the rules) and checks from the rules' counters that
// every endpoint's DNAT was taken.
func TestKubeProxyRulesLoadAndBalance(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	testutil.NeedProgram(t, "iptables-nft-restore", "iptables-nft-save")
	endpoints := []string{"198.18.1.2", "198.18.2.2", "198.18.1.3"}
	do, h := nstest.LoopbackNS(t, endpoints...)
	var eps []netip.AddrPort
	for _, a := range endpoints {
		eps = append(eps, testutil.StartTCPEcho(t, do, netip.MustParseAddr(a)))
	}
	vip := netip.MustParseAddrPort("198.19.0.10:80")
	run := loadService(t, do, h, Service{Name: "default/echo:rr", VIP: vip.Addr(), Port: vip.Port(), Endpoints: eps})
	if saved := run(nil, "iptables-nft-save", "-t", "nat"); !strings.Contains(saved, "--to-destination "+eps[2].String()) {
		t.Fatalf("rules not loaded:\n%s", saved)
	}
	// Each connection comes back through the DNAT; the echo server's
	// address tells which endpoint served it.
	for range 300 {
		if _, err := testutil.TCPRoundTrip(do, vip, []byte("x")); err != nil {
			t.Fatalf("round trip through %v: %v", vip, err)
		}
	}
	// conntrack's view: every connection was DNATed to one of the endpoints.
	for _, ep := range eps {
		out := run(nil, "iptables-nft-save", "-c", "-t", "nat")
		line := ""
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "--to-destination "+ep.String()) {
				line = l
			}
		}
		// "[packets:bytes] -A KUBE-SEP-… -j DNAT …": at least one packet each.
		if line == "" || strings.HasPrefix(line, "[0:") {
			t.Errorf("endpoint %v served nothing: %q", ep, line)
		}
	}
}

// loadService routes svc's VIP to the namespace's loopback (kube-proxy's
// VIPs are routed like any remote address, via the default route; the
// DNAT happens first) and loads its kube-proxy rules with
// iptables-nft-restore there. It returns a runner of further programs in
// the namespace (stdin, program, arguments → stdout).
func loadService(t *testing.T, do testutil.Do, h *netlink.Handle, svc Service) func([]byte, string, ...string) string {
	t.Helper()
	lo, err := h.LinkByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.RouteAdd(&netlink.Route{LinkIndex: lo.Attrs().Index, Dst: netlink.NewIPNet(svc.VIP.AsSlice())}); err != nil {
		t.Fatal(err)
	}
	rules, err := KubeProxyRules([]Service{svc})
	if err != nil {
		t.Fatal(err)
	}
	run := func(stdin []byte, prog string, args ...string) string {
		t.Helper()
		cmd := exec.Command(prog, args...)
		cmd.Stdin = bytes.NewReader(stdin)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := do(cmd.Start); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%s: %v: %s", prog, err, errb.String())
		}
		return out.String()
	}
	run(rules, "iptables-nft-restore", "--noflush", "-w")
	return run
}
