package capture

import (
	"encoding/binary"
	"fmt"
)

// Layout of a TPACKET_V3 ring block (linux/if_packet.h), in host byte
// order: struct tpacket_block_desc, whose header is a tpacket_hdr_v1, then
// packets, each a struct tpacket3_hdr followed (at TPACKET_ALIGN(48)) by
// a struct sockaddr_ll, and the frame at tp_mac from the packet's start.
const (
	blkStatus   = 8  // tpacket_hdr_v1.block_status
	blkNumPkts  = 12 // tpacket_hdr_v1.num_pkts
	blkFirstPkt = 16 // tpacket_hdr_v1.offset_to_first_pkt
	blkHeader   = 48 // sizeof(struct tpacket_block_desc), rounded as the kernel does

	pktNext    = 0  // tpacket3_hdr.tp_next_offset
	pktSnaplen = 12 // tpacket3_hdr.tp_snaplen
	pktLen     = 16 // tpacket3_hdr.tp_len
	pktMac     = 24 // tpacket3_hdr.tp_mac (u16)
	pktSll     = 48 // TPACKET_ALIGN(sizeof(struct tpacket3_hdr))
	sllPkttype = 10 // sockaddr_ll.sll_pkttype (u8)
	pktHeader  = pktSll + 20

	pktOutgoing = 4 // PACKET_OUTGOING
)

// walkBlock calls add for every packet of a TPACKET_V3 block the kernel
// handed over. A packet that points outside the block ends the walk with an
// error (the packets before it are counted).
func walkBlock(blk []byte, add func(data []byte, wireLen uint32, outgoing bool)) error {
	if len(blk) < blkHeader {
		return fmt.Errorf("ring block of %d bytes: shorter than its header", len(blk))
	}
	ne := binary.NativeEndian
	n := ne.Uint32(blk[blkNumPkts:])
	off := int(ne.Uint32(blk[blkFirstPkt:]))
	for i := uint32(0); i < n; i++ {
		if off < blkHeader || off > len(blk)-pktHeader {
			return fmt.Errorf("ring block: packet %d of %d at offset %d is outside the %d-byte block", i, n, off, len(blk))
		}
		p := blk[off:]
		snap := int(ne.Uint32(p[pktSnaplen:]))
		mac := int(ne.Uint16(p[pktMac:]))
		if mac < pktHeader || snap > len(p)-mac {
			return fmt.Errorf("ring block: packet %d of %d at offset %d: %d bytes at %d overrun the block", i, n, off, snap, mac)
		}
		add(p[mac:mac+snap], ne.Uint32(p[pktLen:]), p[pktSll+sllPkttype] == pktOutgoing)
		next := int(ne.Uint32(p[pktNext:]))
		if next == 0 {
			if i+1 < n {
				return fmt.Errorf("ring block: packet %d of %d has no successor", i, n)
			}
			break
		}
		off += next
	}
	return nil
}
