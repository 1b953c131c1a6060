package ipset

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// PerMsg is how many entries one ADT request of Conn.Add carries: about
// 64 KiB, close to the most a nested attribute's 16-bit length allows
// (maxPerMsg).
const PerMsg = 2700

// Conn is a netfilter netlink socket in one network namespace speaking
// the ipset protocol (what the ipset tool's libipset does, without its
// text). It creates, fills and destroys IPv4 hash:net sets.
type Conn struct {
	c *netlink.Conn
}

// Dial opens the socket in the network namespace of nsFd (-1: the calling
// thread's).
func Dial(nsFd int) (*Conn, error) {
	c, err := netlink.Dial(unix.NETLINK_NETFILTER, &netlink.Config{NetNS: nsFd})
	if err != nil {
		return nil, fmt.Errorf("open netfilter netlink socket for ipset: %w", err)
	}
	// Big ADT requests: make room for them in the kernel's view of our
	// send buffer (netlink_sendmsg refuses a message larger than sndbuf).
	_ = c.SetWriteBuffer(1 << 20)
	return &Conn{c: c}, nil
}

func (s *Conn) Close() error { return s.c.Close() }

// do sends one request and waits for its acknowledgement. A request the
// kernel answers with data (IPSET_CMD_TYPE) asks for no acknowledgement:
// it would follow the reply and be read as the next request's answer.
func (s *Conn) do(cmd int, flags netlink.HeaderFlags, data []byte) ([]netlink.Message, error) {
	if cmd != cmdType {
		flags |= netlink.Acknowledge
	}
	msgs, err := s.c.Execute(netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(msgType(cmd)), Flags: netlink.Request | flags},
		Data:   data,
	})
	return msgs, kernelErr(err)
}

// Revision returns the newest hash:net revision the kernel has (as the
// ipset tool picks it).
func (s *Conn) Revision() (uint8, error) {
	msgs, err := s.do(cmdType, 0, typeRequest("hash:net"))
	if err != nil {
		return 0, fmt.Errorf("ask the kernel for ipset type hash:net: %w", err)
	}
	for _, m := range msgs {
		if m.Header.Type == netlink.HeaderType(msgType(cmdType)) {
			return parseTypeReply(m.Data)
		}
	}
	return 0, errors.New("ask the kernel for ipset type hash:net: no reply")
}

// Create creates the IPv4 hash:net set name at the kernel's newest
// revision, which it returns, with the given hashsize and maxelem.
func (s *Conn) Create(name string, hashsize, maxelem int) (uint8, error) {
	rev, err := s.Revision()
	if err != nil {
		return 0, err
	}
	if _, err := s.do(cmdCreate, netlink.Create|netlink.Excl, createRequest(name, rev, uint32(hashsize), uint32(maxelem))); err != nil {
		return 0, fmt.Errorf("create ipset %s hash:net revision %d: %w", name, rev, err)
	}
	return rev, nil
}

// Add loads cidrs in ADT requests of PerMsg entries, encoding each
// into one reused buffer just before it is sent; it returns the number of
// requests.
func (s *Conn) Add(ctx context.Context, name string, cidrs []netip.Prefix) (int, error) {
	var buf []byte
	reqs := 0
	for i := 0; i < len(cidrs); i += PerMsg {
		if err := ctx.Err(); err != nil {
			return reqs, err
		}
		var err error
		if buf, err = appendADT(buf[:0], name, cidrs[i:min(i+PerMsg, len(cidrs))]); err != nil {
			return reqs, err
		}
		if _, err := s.do(cmdAdd, netlink.Excl, buf); err != nil {
			return reqs, fmt.Errorf("add entries %d.. to ipset %s: %w", i, name, err)
		}
		reqs++
	}
	return reqs, nil
}

// AddOne adds one prefix to set name, as `ipset add` does.
func (s *Conn) AddOne(name string, p netip.Prefix) error { return s.one(cmdAdd, name, p) }

// DelOne deletes one prefix from set name, as `ipset del` does.
func (s *Conn) DelOne(name string, p netip.Prefix) error { return s.one(cmdDel, name, p) }

func (s *Conn) one(cmd int, name string, p netip.Prefix) error {
	r, err := oneRequest(name, p)
	if err != nil {
		return err
	}
	_, err = s.do(cmd, netlink.Excl, r)
	return err
}

// Destroy destroys set name.
func (s *Conn) Destroy(name string) error {
	_, err := s.do(cmdDestroy, 0, nameRequest(name))
	return err
}
