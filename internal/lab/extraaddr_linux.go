package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// ExtraAddrNet is the only range AddServerAddress accepts: 240.0.0.0/4 is
// reserved (RFC 1112, "future use") and never routed on a real network, so a
// probe to such an address can only ever reach the lab's own server pod.
var ExtraAddrNet = netip.MustParsePrefix("240.0.0.0/4")

// errNeedsRouted is what AddServerAddress reports for an endpoint of a
// datapath it cannot extend.
var errNeedsRouted = &UnsupportedError{
	Feature: "extra server address",
	Reason:  "egress filter scenario needs a routed datapath (veth-routing family)",
}

// ValidateExtraAddr checks that addr may be given to a server pod: an IPv4
// address inside ExtraAddrNet other than the limited broadcast address.
func ValidateExtraAddr(addr netip.Addr) error {
	if !addr.IsValid() || !addr.Is4() || !ExtraAddrNet.Contains(addr) {
		return fmt.Errorf("extra server address %v: must be an IPv4 address inside %s (reserved, never on a real network)", addr, ExtraAddrNet)
	}
	if addr == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		return fmt.Errorf("extra server address %v: the limited broadcast address cannot be a pod's address", addr)
	}
	return nil
}

// AddServerAddress gives ep's server pod the extra address addr (a /32 on
// its interface) and routes it on both nodes the way the pod's own /32 is
// routed: each node gets a /32 route copied from its route to ep.ServerIP
// (the server's node: directly to the pod's veth; the other node: over the
// wire via the server's node), and the lab's nft chains in the nodes treat
// traffic between the pod supernet and addr as pod-to-pod traffic (accepted
// after the same conntrack rules; NOTRACK where pod traffic is). The client pod then reaches addr exactly as
// it reaches ep.ServerIP, so only a filter can drop a probe to it.
//
// addr must be inside ExtraAddrNet. Only the routed datapaths (those that
// fill ep.ClientNode) support it; others get an error wrapping
// ErrNotSupported. remove undoes it and may be called more than once; the
// lab's Down removes the address and routes anyway (they live in its
// namespaces), and remove after Down does nothing.
func (t *Topology) AddServerAddress(ctx context.Context, ep Endpoint, addr netip.Addr) (remove func(context.Context) error, err error) {
	if err := ValidateExtraAddr(addr); err != nil {
		return nil, err
	}
	if ep.ClientNode == nil || ep.ClientNodeDev == "" {
		return nil, fmt.Errorf("add server address %s on %s path: %w", addr, ep.Kind, errNeedsRouted)
	}
	if ep.Server == nil || ep.Server.handle == nil || !ep.ServerIP.Is4() {
		return nil, fmt.Errorf("add server address %s: endpoint %s has no server pod that is up", addr, ep.Kind)
	}
	for i, n := range t.Nodes {
		if n == nil || n.handle == nil {
			return nil, fmt.Errorf("add server address %s: node%d is not up", addr, i+1)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	var undo []func() error
	add := func(f func() error) { undo = append(undo, f) }
	var once sync.Once
	var undoErr error
	undoAll := func(context.Context) error {
		once.Do(func() {
			for i := len(undo) - 1; i >= 0; i-- { // all steps, whatever fails
				undoErr = errors.Join(undoErr, undo[i]())
			}
			if undoErr != nil {
				undoErr = fmt.Errorf("remove server address %s: %w", addr, undoErr)
			}
		})
		return undoErr
	}
	defer func() {
		if err != nil {
			if rerr := undoAll(context.WithoutCancel(ctx)); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
	}()

	server := ep.Server
	link, err := server.handle.LinkByName(PodIf)
	if err != nil {
		return nil, fmt.Errorf("find %s in %s: %w", PodIf, server.Name, err)
	}
	a := &netlink.Addr{IPNet: ipNet(Host32(addr))}
	if err := server.handle.AddrAdd(link, a); err != nil {
		return nil, fmt.Errorf("add address %s to %s in %s: %w", addr, PodIf, server.Name, err)
	}
	add(func() error {
		if server.handle == nil { // the lab is down: gone with the namespace
			return nil
		}
		if err := server.handle.AddrDel(link, a); err != nil && !gone(err) {
			return fmt.Errorf("delete address %s from %s in %s: %w", addr, PodIf, server.Name, err)
		}
		return nil
	})

	for _, node := range t.Nodes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r, err := copyRoute(node, ep.ServerIP, addr)
		if err != nil {
			return nil, err
		}
		if err := node.handle.RouteAdd(r); err != nil {
			return nil, fmt.Errorf("add route %s (as to %s) in %s: %w", addr, ep.ServerIP, node.Name, err)
		}
		add(func() error {
			if node.handle == nil {
				return nil
			}
			if err := node.handle.RouteDel(r); err != nil && !gone(err) {
				return fmt.Errorf("delete route %s in %s: %w", addr, node.Name, err)
			}
			return nil
		})
		add(func() error {
			if !node.fd.IsOpen() {
				return nil
			}
			return removeExtraFromNft(node, addr)
		})
		if err := allowExtraInNft(node, addr); err != nil {
			return nil, err
		}
	}
	return undoAll, nil
}

// copyRoute returns a /32 route to addr in node that goes where node's
// route to like goes (same interface, same gateway).
func copyRoute(node *NS, like, addr netip.Addr) (*netlink.Route, error) {
	rs, err := node.handle.RouteGet(net.IP(like.AsSlice()))
	if err != nil {
		return nil, fmt.Errorf("look up route to %s in %s: %w", like, node.Name, err)
	}
	if len(rs) == 0 || rs[0].LinkIndex == 0 {
		return nil, fmt.Errorf("look up route to %s in %s: no route", like, node.Name)
	}
	if rs[0].Type != unix.RTN_UNICAST {
		return nil, fmt.Errorf("route to %s in %s is of type %d, not a unicast route: %w", like, node.Name, rs[0].Type, errNeedsRouted)
	}
	r := &netlink.Route{LinkIndex: rs[0].LinkIndex, Dst: ipNet(Host32(addr))}
	if rs[0].Gw != nil {
		r.Gw = rs[0].Gw
	} else {
		r.Scope = netlink.SCOPE_LINK
	}
	return r, nil
}

// gone reports whether a delete failed because the object is not there.
func gone(err error) bool {
	return errors.Is(err, unix.ESRCH) || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EADDRNOTAVAIL) ||
		errors.Is(err, unix.ENODEV)
}

// Comment of the nft rules AddServerAddress adds; the address follows.
const ruleExtraPrefix = "extra-addr "

// labNft opens an nftables connection to node and lists the chains of the
// lab's table there.
func labNft(node *NS) (*nftables.Conn, []*nftables.Chain, error) {
	c, err := nftables.New(nftables.WithNetNSFd(node.Fd()))
	if err != nil {
		return nil, nil, fmt.Errorf("nftables connection in %s: %w", node.Name, err)
	}
	all, err := c.ListChainsOfTableFamily(nftables.TableFamilyIPv4)
	if err != nil {
		return nil, nil, fmt.Errorf("list nft chains in %s: %w", node.Name, err)
	}
	var chains []*nftables.Chain
	for _, ch := range all {
		if ch.Table != nil && ch.Table.Name == NftTable {
			chains = append(chains, ch)
		}
	}
	return c, chains, nil
}

// allowExtraInNft lets traffic between the pod supernet and addr through
// the lab's nft chains in node exactly as pod-to-pod traffic goes: accepted
// at the end of the forward chain (after the same ct-established and
// ct-invalid rules), and marked NOTRACK where the datapath marks pod traffic
// NOTRACK. It is a no-op in a node without the lab's table.
func allowExtraInNft(node *NS, addr netip.Addr) error {
	c, chains, err := labNft(node)
	if err != nil {
		return err
	}
	x := Host32(addr)
	both := [][]expr.Any{
		append(NftIPInPrefix(12, PodSupernet), NftIPInPrefix(16, x)...),
		append(NftIPInPrefix(12, x), NftIPInPrefix(16, PodSupernet)...),
	}
	for _, ch := range chains {
		var verdict expr.Any
		switch ch.Name {
		case "forward":
			verdict = &expr.Verdict{Kind: expr.VerdictAccept}
		case "raw-prerouting", "raw-output":
			verdict = &expr.Notrack{}
		default:
			continue
		}
		for _, match := range both {
			exprs := append(append([]expr.Any{}, match...), &expr.Counter{}, verdict)
			c.AddRule(NftRule(ch.Table, ch, ruleExtraPrefix+addr.String(), exprs...))
		}
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("allow %s in the nft rules of %s: %w", addr, node.Name, err)
	}
	return nil
}

// removeExtraFromNft deletes the rules allowExtraInNft added for addr.
func removeExtraFromNft(node *NS, addr netip.Addr) error {
	c, chains, err := labNft(node)
	if err != nil {
		return err
	}
	n := 0
	for _, ch := range chains {
		rules, err := c.GetRules(ch.Table, ch)
		if err != nil {
			return fmt.Errorf("list nft rules of chain %s in %s: %w", ch.Name, node.Name, err)
		}
		for _, r := range rules {
			if name, _ := userdata.GetString(r.UserData, userdata.TypeComment); name == ruleExtraPrefix+addr.String() {
				if err := c.DelRule(r); err != nil {
					return fmt.Errorf("delete nft rule %q in %s: %w", name, node.Name, err)
				}
				n++
			}
		}
	}
	if n == 0 {
		return nil
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("delete the nft rules for %s in %s: %w", addr, node.Name, err)
	}
	return nil
}
