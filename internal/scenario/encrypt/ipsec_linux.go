package encrypt

import (
	"context"
	"errors"
	"fmt"

	"github.com/cnibench/cnibench/internal/ipsec"
	"github.com/cnibench/cnibench/internal/lab"
)

// userspaceESPPort and userspaceTUNMTU: charon's libipsec always sends ESP
// in UDP on the NAT-traversal port, through its ipsec0 device of MTU 1400.
const (
	userspaceESPPort = 4500
	userspaceTUNMTU  = 1400
)

// algOf maps a cipher label to the ESP algorithm.
func algOf(cipher string) (ipsec.Algorithm, error) {
	switch cipher {
	case CipherGCM:
		return ipsec.AESGCM128, nil
	case CipherCBC:
		return ipsec.AESCBCHMACSHA256, nil
	}
	return "", fmt.Errorf("ipsec: unknown cipher %q", cipher)
}

func probeIPsecKernel(cipher string) error {
	alg, err := algOf(cipher)
	if err != nil {
		return err
	}
	return ipsec.ProbeKernel(alg)
}

func probeIPsecUserspace(string) error { return ipsec.ProbeUserspace() }

// ipsec sets up ESP in tunnel mode between the nodes' wire addresses for
// their pod CIDRs: xfrm states and policies through netlink (kernel), or
// one strongSwan charon per node with its kernel-libipsec plugin doing ESP
// in userspace over a TUN device (IKEv2, per-run PSK). It returns the
// per-packet overhead.
func (pr *prepared) ipsec(ctx context.Context) (int, error) {
	alg, err := algOf(pr.p.cipher)
	if err != nil {
		return 0, err
	}
	nodes := pr.lab.Topology.Nodes
	pr.proto = "esp"
	if pr.p.enc == IPsec {
		t, err := ipsec.NewTunnel(alg, lab.WireIPs[0], lab.WireIPs[1], lab.PodCIDRs[0], lab.PodCIDRs[1])
		if err != nil {
			return 0, err
		}
		for i, side := range []ipsec.Tunnel{t, t.Mirror()} {
			h := nodes[i].Handle()
			if err := ipsec.Apply(h, side); err != nil {
				return 0, fmt.Errorf("xfrm on %s: %w", nodes[i].Name, err)
			}
			pr.undo = append(pr.undo, func() error { return ipsec.Remove(h, side) })
		}
		pr.config["encryption_impl"] = fmt.Sprintf("kernel ESP (xfrm through netlink), tunnel mode, %s, per-run keys", alg)
		return ipsec.Overhead(alg), nil
	}
	psk, err := ipsec.NewPSK()
	if err != nil {
		return 0, err
	}
	// Both sides at once: each waits until the CHILD_SA is up, which
	// needs the other side running.
	type started struct {
		stop func() error
		err  error
	}
	var res [2]chan started
	for i, node := range nodes {
		other := 1 - i
		res[i] = make(chan started, 1)
		go func() {
			stop, err := ipsec.StartUserspace(ctx, node.Fd(), ipsec.UserspaceConfig{
				Local: lab.WireIPs[i], Remote: lab.WireIPs[other], LocalNet: lab.PodCIDRs[i], RemoteNet: lab.PodCIDRs[other],
				Alg: alg, PSK: psk, Initiate: i == 0,
			})
			if err != nil {
				err = fmt.Errorf("strongSwan (kernel-libipsec) on %s: %w", node.Name, err)
			}
			res[i] <- started{stop, err}
		}()
	}
	var errs []error
	for i := range res {
		r := <-res[i]
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		pr.undo = append(pr.undo, r.stop)
	}
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	pr.proto = fmt.Sprintf("udp/%d", userspaceESPPort)
	pr.config["encryption_impl"] = fmt.Sprintf("strongSwan charon with kernel-libipsec: ESP in UDP (port %d) in userspace over a TUN device (MTU %d, fixed by libipsec), one process per node, IKEv2 with a per-run PSK, %s; each node given its pod CIDR's network address on lo (kernel-libipsec's route source) for the tunnel's lifetime", userspaceESPPort, userspaceTUNMTU, alg)
	// The pods' MTU must fit the smaller of the ESP-in-UDP budget and
	// libipsec's TUN device.
	wire := pr.lab.Topology.PodMTU
	return wire - min(ipsec.PodMTU(wire-ipsec.UDPEncapOverhead, alg), userspaceTUNMTU), nil
}
