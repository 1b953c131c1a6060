package egress

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// ipsetPerMsg is how many entries one ADT request carries: about 64 KiB, close
// to the most a nested attribute's 16-bit length allows (ipsetMaxPerMsg).
const ipsetPerMsg = 2700

// ipsetConn is a netfilter netlink socket in one network namespace speaking
// the ipset protocol (what the ipset tool's libipset does, without its text).
type ipsetConn struct {
	c *netlink.Conn
}

// dialIPSet opens the socket in the namespace of nsFd.
func dialIPSet(nsFd int) (*ipsetConn, error) {
	c, err := netlink.Dial(unix.NETLINK_NETFILTER, &netlink.Config{NetNS: nsFd})
	if err != nil {
		return nil, fmt.Errorf("open netfilter netlink socket for ipset: %w", err)
	}
	// Big ADT requests: make room for them in the kernel's view of our
	// send buffer (netlink_sendmsg refuses a message larger than sndbuf).
	_ = c.SetWriteBuffer(1 << 20)
	return &ipsetConn{c: c}, nil
}

func (s *ipsetConn) Close() error { return s.c.Close() }

// do sends one request and waits for its acknowledgement. A request the
// kernel answers with data (IPSET_CMD_TYPE) asks for no acknowledgement:
// it would follow the reply and be read as the next request's answer.
func (s *ipsetConn) do(cmd int, flags netlink.HeaderFlags, data []byte) ([]netlink.Message, error) {
	if cmd != ipsetCmdType {
		flags |= netlink.Acknowledge
	}
	msgs, err := s.c.Execute(netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(ipsetMsgType(cmd)), Flags: netlink.Request | flags},
		Data:   data,
	})
	return msgs, ipsetErr(err)
}

// revision returns the newest hash:net revision the kernel has (as the
// ipset tool picks it).
func (s *ipsetConn) revision() (uint8, error) {
	msgs, err := s.do(ipsetCmdType, 0, ipsetTypeRequest("hash:net"))
	if err != nil {
		return 0, fmt.Errorf("ask the kernel for ipset type hash:net: %w", err)
	}
	for _, m := range msgs {
		if m.Header.Type == netlink.HeaderType(ipsetMsgType(ipsetCmdType)) {
			return parseIPSetTypeReply(m.Data)
		}
	}
	return 0, errors.New("ask the kernel for ipset type hash:net: no reply")
}

func (s *ipsetConn) create(name string, hashsize, maxelem int) (uint8, error) {
	rev, err := s.revision()
	if err != nil {
		return 0, err
	}
	if _, err := s.do(ipsetCmdCreate, netlink.Create|netlink.Excl, ipsetCreateRequest(name, rev, uint32(hashsize), uint32(maxelem))); err != nil {
		return 0, fmt.Errorf("create ipset %s hash:net revision %d: %w", name, rev, err)
	}
	return rev, nil
}

// add loads cidrs in ADT requests of ipsetPerMsg entries, encoding each
// into one reused buffer just before it is sent; it returns the number of
// requests.
func (s *ipsetConn) add(ctx context.Context, name string, cidrs []netip.Prefix) (int, error) {
	var buf []byte
	reqs := 0
	for i := 0; i < len(cidrs); i += ipsetPerMsg {
		if err := ctx.Err(); err != nil {
			return reqs, err
		}
		var err error
		if buf, err = appendIPSetADT(buf[:0], name, cidrs[i:min(i+ipsetPerMsg, len(cidrs))]); err != nil {
			return reqs, err
		}
		if _, err := s.do(ipsetCmdAdd, netlink.Excl, buf); err != nil {
			return reqs, fmt.Errorf("add entries %d.. to ipset %s: %w", i, name, err)
		}
		reqs++
	}
	return reqs, nil
}

// one adds (cmd ipsetCmdAdd) or deletes (ipsetCmdDel) one prefix.
func (s *ipsetConn) one(cmd int, name string, p netip.Prefix) error {
	r, err := ipsetOneRequest(name, p)
	if err != nil {
		return err
	}
	_, err = s.do(cmd, netlink.Excl, r)
	return err
}

func (s *ipsetConn) destroy(name string) error {
	_, err := s.do(ipsetCmdDestroy, 0, ipsetNameRequest(name))
	return err
}
