// Package ipset speaks the kernel's ipset netlink protocol
// (linux/netfilter/ipset/ip_set.h) to create, fill and destroy IPv4
// hash:net sets in a network namespace, without the ipset tool or its
// text: a load of a million entries costs a few copies of 24 bytes each.
// The encoders and the reply parser are pure (and fuzzed); conn_linux.go
// sends what they build.
package ipset

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"syscall"
)

// Requests are nfnetlink messages of subsystem NFNL_SUBSYS_IPSET whose
// attributes are encoded here by hand.
const (
	nfnlSubsysIPSet = 6 // NFNL_SUBSYS_IPSET
	protocol        = 6 // IPSET_PROTOCOL_MIN: every kernel with ipset v6+ accepts it

	cmdCreate  = 2
	cmdDestroy = 3
	cmdAdd     = 9
	cmdDel     = 10
	cmdType    = 13

	// Command-level attributes.
	attrProtocol = 1
	attrSetname  = 2
	attrTypename = 3
	attrRevision = 4
	attrFamily   = 5
	attrData     = 7
	attrADT      = 8
	attrLineno   = 9
	// Data attributes.
	attrIP       = 1
	attrCIDR     = 3
	attrHashsize = 18
	attrMaxelem  = 19
	attrIPv4     = 1 // IPSET_ATTR_IPADDR_IPV4, nested in IPSET_ATTR_IP

	nlaFNested       = 0x8000
	nlaFNetByteorder = 0x4000
	nfnetlinkV0      = 0

	// entryBytes is the encoded size of one hash:net IPv4 entry in an
	// ADT container: DATA{ IP{ IPV4 be32 }, CIDR u8 (padded) }.
	entryBytes = 4 + (4 + 8) + 8
)

// msgType is the nlmsg type of an ipset command.
func msgType(cmd int) uint16 { return uint16(nfnlSubsysIPSet<<8 | cmd) }

// nlAttr appends one attribute (header, payload, padding to 4 bytes).
func nlAttr(b []byte, typ uint16, payload []byte) []byte {
	b = binary.NativeEndian.AppendUint16(b, uint16(4+len(payload)))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = append(b, payload...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// nlNestStart appends a nested attribute's header and returns its offset
// for nlNestEnd, which writes the final length.
func nlNestStart(b []byte, typ uint16) ([]byte, int) {
	off := len(b)
	b = binary.NativeEndian.AppendUint16(b, 0)
	b = binary.NativeEndian.AppendUint16(b, typ|nlaFNested)
	return b, off
}

func nlNestEnd(b []byte, off int) []byte {
	binary.NativeEndian.PutUint16(b[off:], uint16(len(b)-off))
	return b
}

// header is the nfgenmsg every ipset request starts with (family
// AF_INET, version 0, res_id 0) followed by the protocol attribute.
func header(b []byte) []byte {
	b = append(b, syscall.AF_INET, nfnetlinkV0, 0, 0)
	return nlAttr(b, attrProtocol, []byte{protocol})
}

func cString(s string) []byte { return append([]byte(s), 0) }

func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// typeRequest asks which revisions of type typ (e.g. "hash:net") the
// kernel supports for IPv4.
func typeRequest(typ string) []byte {
	b := header(nil)
	b = nlAttr(b, attrTypename, cString(typ))
	return nlAttr(b, attrFamily, []byte{syscall.AF_INET})
}

// createRequest creates the IPv4 hash:net set name at revision rev
// with the given hashsize and maxelem (what `ipset create NAME hash:net
// family inet hashsize H maxelem M` sends).
func createRequest(name string, rev uint8, hashsize, maxelem uint32) []byte {
	b := header(nil)
	b = nlAttr(b, attrSetname, cString(name))
	b = nlAttr(b, attrTypename, cString("hash:net"))
	b = nlAttr(b, attrRevision, []byte{rev})
	b = nlAttr(b, attrFamily, []byte{syscall.AF_INET})
	b, off := nlNestStart(b, attrData)
	b = nlAttr(b, attrHashsize|nlaFNetByteorder, be32(hashsize))
	b = nlAttr(b, attrMaxelem|nlaFNetByteorder, be32(maxelem))
	return nlNestEnd(b, off)
}

// nameRequest is a request naming only the set (destroy).
func nameRequest(name string) []byte {
	return nlAttr(header(nil), attrSetname, cString(name))
}

// appendEntry appends one IPv4 prefix as a DATA container.
func appendEntry(b []byte, p netip.Prefix) []byte {
	b, data := nlNestStart(b, attrData)
	b, ip := nlNestStart(b, attrIP)
	a := p.Addr().As4()
	b = nlAttr(b, attrIPv4|nlaFNetByteorder, a[:])
	b = nlNestEnd(b, ip)
	b = nlAttr(b, attrCIDR, []byte{uint8(p.Bits())})
	return nlNestEnd(b, data)
}

// maxPerMsg is the most entries one ADT request can carry: the ADT
// attribute's length is 16 bits.
const maxPerMsg = (0xffff - 4) / entryBytes

// appendADT appends one ADT request for part (at most maxPerMsg
// entries) to b[:0]-style buffers: callers reuse b between requests.
func appendADT(b []byte, name string, part []netip.Prefix) ([]byte, error) {
	if len(part) > maxPerMsg {
		return nil, fmt.Errorf("ipset request: %d entries, at most %d fit", len(part), maxPerMsg)
	}
	b = header(b)
	b = nlAttr(b, attrSetname, cString(name))
	// The kernel requires a line number with an ADT container, as
	// `ipset restore` sends it (it reports a failing entry's own, which
	// these do not carry).
	b = nlAttr(b, attrLineno, binary.NativeEndian.AppendUint32(nil, 0))
	b, adt := nlNestStart(b, attrADT)
	for _, p := range part {
		if !p.Addr().Is4() || p.Masked() != p {
			return nil, fmt.Errorf("ipset entry %v: not a masked IPv4 prefix", p)
		}
		b = appendEntry(b, p)
	}
	return nlNestEnd(b, adt), nil
}

// oneRequest encodes adding or deleting one prefix (a DATA attribute
// at command level, as `ipset add` sends it).
func oneRequest(name string, p netip.Prefix) ([]byte, error) {
	if !p.Addr().Is4() || p.Masked() != p {
		return nil, fmt.Errorf("ipset entry %v: not a masked IPv4 prefix", p)
	}
	b := nlAttr(header(nil), attrSetname, cString(name))
	return appendEntry(b, p), nil
}

// parseTypeReply returns the highest revision (IPSET_ATTR_REVISION) of
// an IPSET_CMD_TYPE reply's payload (nfgenmsg and attributes).
func parseTypeReply(p []byte) (uint8, error) {
	if len(p) < 4 {
		return 0, fmt.Errorf("ipset type reply: %d bytes, shorter than its header", len(p))
	}
	p = p[4:]
	for len(p) >= 4 {
		l := int(binary.NativeEndian.Uint16(p))
		typ := binary.NativeEndian.Uint16(p[2:]) &^ (nlaFNested | nlaFNetByteorder)
		if l < 4 || l > len(p) {
			return 0, fmt.Errorf("ipset type reply: attribute length %d of %d bytes left", l, len(p))
		}
		if typ == attrRevision {
			if l < 5 {
				return 0, fmt.Errorf("ipset type reply: revision attribute of %d bytes", l)
			}
			return p[4], nil
		}
		adv := (l + 3) &^ 3
		if adv > len(p) {
			break
		}
		p = p[adv:]
	}
	return 0, fmt.Errorf("ipset type reply: no revision attribute")
}

// ErrHashFull is IPSET_ERR_HASH_FULL, the kernel's answer to an add beyond
// maxelem (the ipset tool prints "Hash is full, cannot add more elements").
const ErrHashFull = syscall.Errno(4352)

// errText names the ipset-specific error codes the kernel returns as
// negative errnos (ip_set.h: IPSET_ERR_*).
var errText = map[syscall.Errno]string{
	4097: "protocol error", 4098: "set type not supported by the kernel",
	4099: "too many sets", 4100: "set busy", 4101: "second set does not exist",
	4102: "set type mismatch", 4103: "set or element exists (or, deleting, is missing)", 4104: "invalid CIDR",
	4105: "invalid netmask", 4106: "invalid family", 4107: "timeout not supported",
	4108: "set is referenced by a rule", 4109: "invalid IPv4 address",
	4352: "hash is full (maxelem reached)", 4353: "too many elements in one bucket",
	4354: "invalid protocol", 4355: "missing protocol",
}

// kernelErr makes a kernel error readable: an ipset code gets its name.
func kernelErr(err error) error {
	var e syscall.Errno
	if errors.As(err, &e) {
		if s, ok := errText[e]; ok {
			return fmt.Errorf("%s (ipset error %d): %w", s, int(e), err)
		}
	}
	return err
}
