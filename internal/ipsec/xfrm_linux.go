package ipsec

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// replayWindow is the incoming SA's anti-replay window, in packets: with
// the netlink default (0) the kernel checks no sequence numbers at all.
// Outgoing SAs need none.
const replayWindow = 64

// States returns t's two xfrm states: the outgoing SA (Local -> Remote,
// SPIOut, KeyOut, marked when t.MarkMask is set) and the incoming one
// (Remote -> Local, SPIIn, KeyIn). Both are ESP in tunnel mode. t must be
// valid (Validate); the keys are not copied.
func States(t Tunnel) []*netlink.XfrmState {
	out := state(t.Local, t.Remote, t.SPIOut, t.KeyOut, t)
	if t.MarkMask != 0 {
		out.Mark = &netlink.XfrmMark{Value: t.Mark, Mask: t.MarkMask}
	}
	in := state(t.Remote, t.Local, t.SPIIn, t.KeyIn, t)
	in.ReplayWindow = replayWindow
	return []*netlink.XfrmState{out, in}
}

func state(src, dst netip.Addr, spi uint32, key []byte, t Tunnel) *netlink.XfrmState {
	s := &netlink.XfrmState{
		Src:   ip(src),
		Dst:   ip(dst),
		Proto: netlink.XFRM_PROTO_ESP,
		Mode:  netlink.XFRM_MODE_TUNNEL,
		Spi:   int(spi),
		Reqid: t.ReqID,
	}
	p, _ := t.Alg.params()
	switch t.Alg {
	case AESGCM128:
		// The kernel takes the salt as the key's last 4 bytes.
		s.Aead = &netlink.XfrmStateAlgo{Name: string(AESGCM128), Key: key, ICVLen: p.icv * 8}
	case AESCBCHMACSHA256:
		enc, auth := key, []byte(nil) // a short key (invalid t) is left for the kernel to refuse
		if len(key) >= p.encKey {
			enc, auth = key[:p.encKey], key[p.encKey:]
		}
		s.Crypt = &netlink.XfrmStateAlgo{Name: "cbc(aes)", Key: enc}
		s.Auth = &netlink.XfrmStateAlgo{Name: "hmac(sha256)", Key: auth, TruncateLen: p.icv * 8}
	}
	return s
}

// Policies returns t's three xfrm policies, as Cilium and Calico install
// them for tunnel mode: out (LocalNet -> RemoteNet must be encrypted with
// the Local -> Remote SA), in (RemoteNet -> LocalNet delivered locally must
// have arrived through the Remote -> Local SA) and fwd (the same for
// traffic forwarded to a pod, which the kernel checks against fwd, not in).
func Policies(t Tunnel) []*netlink.XfrmPolicy {
	outTmpl := netlink.XfrmPolicyTmpl{Src: ip(t.Local), Dst: ip(t.Remote), Proto: netlink.XFRM_PROTO_ESP, Mode: netlink.XFRM_MODE_TUNNEL, Reqid: t.ReqID}
	inTmpl := netlink.XfrmPolicyTmpl{Src: ip(t.Remote), Dst: ip(t.Local), Proto: netlink.XFRM_PROTO_ESP, Mode: netlink.XFRM_MODE_TUNNEL, Reqid: t.ReqID}
	out := &netlink.XfrmPolicy{Src: ipNet(t.LocalNet), Dst: ipNet(t.RemoteNet), Dir: netlink.XFRM_DIR_OUT, Tmpls: []netlink.XfrmPolicyTmpl{outTmpl}}
	if t.MarkMask != 0 {
		out.Mark = &netlink.XfrmMark{Value: t.Mark, Mask: t.MarkMask}
	}
	in := &netlink.XfrmPolicy{Src: ipNet(t.RemoteNet), Dst: ipNet(t.LocalNet), Dir: netlink.XFRM_DIR_IN, Tmpls: []netlink.XfrmPolicyTmpl{inTmpl}}
	fwd := &netlink.XfrmPolicy{Src: ipNet(t.RemoteNet), Dst: ipNet(t.LocalNet), Dir: netlink.XFRM_DIR_FWD, Tmpls: []netlink.XfrmPolicyTmpl{inTmpl}}
	return []*netlink.XfrmPolicy{out, in, fwd}
}

// Apply installs t's states, then its policies (so that no policy is ever
// without its SA), through h (a handle in the node's namespace). On error
// it removes what it added and returns which step failed; a kernel without
// ESP or without the algorithm gives an error wrapping ErrNotSupported.
func Apply(h *netlink.Handle, t Tunnel) error {
	if err := t.Validate(); err != nil {
		return err
	}
	var added []func() error
	undo := func(err error) error {
		for i := len(added) - 1; i >= 0; i-- {
			if uerr := added[i](); uerr != nil {
				err = errors.Join(err, fmt.Errorf("undo: %w", uerr))
			}
		}
		return err
	}
	for _, s := range States(t) {
		if err := h.XfrmStateAdd(s); err != nil {
			return undo(fmt.Errorf("add ESP state %s->%s spi 0x%x (%s): %w", s.Src, s.Dst, s.Spi, t.Alg, classify(err, t.Alg)))
		}
		added = append(added, func() error { return ignoreMissing(h.XfrmStateDel(s)) })
	}
	for _, p := range Policies(t) {
		if err := h.XfrmPolicyAdd(p); err != nil {
			return undo(fmt.Errorf("add xfrm policy %s %s->%s: %w", p.Dir, p.Src, p.Dst, err))
		}
		added = append(added, func() error { return ignoreMissing(h.XfrmPolicyDel(p)) })
	}
	return nil
}

// Remove deletes exactly what Apply(h, t) installs: the policies by
// selector, direction and mark, the states by address, SPI and mark; never
// a flush, so other tunnels and other tools' xfrm state survive. Entries
// already gone are not an error.
func Remove(h *netlink.Handle, t Tunnel) error {
	var errs []error
	for _, p := range Policies(t) {
		if err := ignoreMissing(h.XfrmPolicyDel(p)); err != nil {
			errs = append(errs, fmt.Errorf("delete xfrm policy %s %s->%s: %w", p.Dir, p.Src, p.Dst, err))
		}
	}
	for _, s := range States(t) {
		if err := ignoreMissing(h.XfrmStateDel(s)); err != nil {
			errs = append(errs, fmt.Errorf("delete ESP state %s->%s spi 0x%x: %w", s.Src, s.Dst, s.Spi, err))
		}
	}
	return errors.Join(errs...)
}

// ignoreMissing turns "no such state/policy" into success.
func ignoreMissing(err error) error {
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH) {
		return nil
	}
	return err
}

func ip(a netip.Addr) net.IP { return net.IP(a.AsSlice()) }

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: ip(p.Addr()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}
