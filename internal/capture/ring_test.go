package capture

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

// testBlock lays frames out as the kernel does in a TPACKET_V3 block: the
// first at 48, each at tp_mac 82 from its header, headers 16-byte aligned.
func testBlock(size int, frames [][]byte, outgoing []bool) []byte {
	ne := binary.NativeEndian
	blk := make([]byte, size)
	ne.PutUint32(blk[blkNumPkts:], uint32(len(frames)))
	ne.PutUint32(blk[blkFirstPkt:], blkHeader)
	off := blkHeader
	for i, f := range frames {
		const mac = 82
		p := blk[off:]
		ne.PutUint32(p[pktSnaplen:], uint32(len(f)))
		ne.PutUint32(p[pktLen:], uint32(len(f)+1000))
		ne.PutUint16(p[pktMac:], mac)
		if outgoing[i] {
			p[pktSll+sllPkttype] = pktOutgoing
		}
		copy(p[mac:], f)
		next := (mac + len(f) + 15) &^ 15
		if i+1 < len(frames) {
			ne.PutUint32(p[pktNext:], uint32(next))
		}
		off += next
	}
	return blk
}

type seen struct {
	data     []byte
	wireLen  uint32
	outgoing bool
}

func walk(blk []byte) ([]seen, error) {
	var out []seen
	err := walkBlock(blk, func(d []byte, n uint32, o bool) {
		out = append(out, seen{append([]byte(nil), d...), n, o})
	})
	return out, err
}

func TestWalkBlock(t *testing.T) {
	frames := [][]byte{[]byte("first frame"), bytes.Repeat([]byte{7}, 300), {}, []byte("last")}
	out := []bool{false, true, false, true}
	got, err := walk(testBlock(4096, frames, out))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(frames) {
		t.Fatalf("walked %d frames, want %d", len(got), len(frames))
	}
	for i, s := range got {
		if !bytes.Equal(s.data, frames[i]) || s.wireLen != uint32(len(frames[i])+1000) || s.outgoing != out[i] {
			t.Errorf("frame %d: %q len %d out %v; want %q len %d out %v", i, s.data, s.wireLen, s.outgoing, frames[i], len(frames[i])+1000, out[i])
		}
	}
	if got, err := walk(testBlock(4096, nil, nil)); err != nil || len(got) != 0 {
		t.Errorf("empty block: %d frames, %v", len(got), err)
	}
}

func TestWalkBlockRejectsOverruns(t *testing.T) {
	ne := binary.NativeEndian
	for _, c := range []struct {
		name  string
		spoil func(blk []byte)
		keep  int // frames counted before the error
		want  string
	}{
		{"first packet past the end", func(b []byte) { ne.PutUint32(b[blkFirstPkt:], 4090) }, 0, "outside"},
		{"first packet inside the header", func(b []byte) { ne.PutUint32(b[blkFirstPkt:], 8) }, 0, "outside"},
		{"snap length past the end", func(b []byte) { ne.PutUint32(b[blkHeader+pktSnaplen:], 5000) }, 0, "overrun"},
		{"mac inside the header", func(b []byte) { ne.PutUint16(b[blkHeader+pktMac:], 10) }, 0, "overrun"},
		{"next past the end", func(b []byte) { ne.PutUint32(b[blkHeader+pktNext:], 1<<20) }, 1, "outside"},
		{"more packets than linked", func(b []byte) { ne.PutUint32(b[blkNumPkts:], 3) }, 2, "no successor"},
	} {
		t.Run(c.name, func(t *testing.T) {
			blk := testBlock(4096, [][]byte{[]byte("a"), []byte("b")}, []bool{false, false})
			c.spoil(blk)
			got, err := walk(blk)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one saying %q", err, c.want)
			}
			if len(got) != c.keep {
				t.Errorf("counted %d frames before the error, want %d", len(got), c.keep)
			}
		})
	}
	if _, err := walk(make([]byte, 10)); err == nil {
		t.Error("a 10-byte block walked without error")
	}
}

func TestTally(t *testing.T) {
	marker := []byte("cnibench:test-marker:0123456789")
	tl := newTally([][]byte{[]byte("another-marker-xyz"), marker}, preferredPorts([]string{"udp/51820"}))
	clear := cat(ether(etherIPv4, 0), ipv4(protoTCP, 0, ports(40000, 5201)), []byte("....."), marker)
	wg := cat(ether(etherIPv4, 0), ipv4(protoUDP, 0, ports(51820, 51820)), bytes.Repeat([]byte{0xa5}, 200))
	tl.add(clear, 1500, true)
	tl.add(wg, 1500, false)
	tl.add(wg, 1500, true)
	tl.add(clear[:len(clear)-1], 1500, false) // the marker cut by the snap length
	for p := uint16(0); p < maxKeys+10; p++ {
		tl.add(cat(ether(etherIPv4, 0), ipv4(protoUDP, 0, ports(30000+p, 30000+p))), 60, false)
	}
	var r Result
	tl.fill(&r)
	if r.Frames != 4+maxKeys+10 || r.Bytes != 4*1500+60*(maxKeys+10) || r.Out != 2 || r.In != r.Frames-2 {
		t.Errorf("frames %d bytes %d in %d out %d", r.Frames, r.Bytes, r.In, r.Out)
	}
	if r.MarkerFrames != 1 || r.MarkerByProto["tcp"] != 1 || len(r.MarkerByProto) != 1 {
		t.Errorf("marker frames %d by proto %v, want 1 in tcp", r.MarkerFrames, r.MarkerByProto)
	}
	if r.ByProto["tcp"] != 2 || r.ByProto["udp/51820"] != 2 {
		t.Errorf("by proto %v", r.ByProto)
	}
	if len(r.ByProto) != maxKeys+1 || r.ByProto["other"] == 0 {
		t.Errorf("%d keys (other: %d), want %d and some other", len(r.ByProto), r.ByProto["other"], maxKeys+1)
	}
	var sum uint64
	for _, n := range r.ByProto {
		sum += n
	}
	if sum != r.Frames {
		t.Errorf("ByProto sums to %d, want %d", sum, r.Frames)
	}
}

func TestTallySegments(t *testing.T) {
	tcp := cat(ether(etherIPv4, 0), ipv4(protoTCP, 0, ports(1, 2))) // 40 bytes of headers
	udp := cat(ether(etherIPv4, 0), ipv4(protoUDP, 0, ports(1, 2))) // 28
	esp := cat(ether(etherIPv4, 0), ipv4(protoESP, 0, make([]byte, 8)))
	for _, c := range []struct {
		name    string
		gro     bool
		frame   []byte
		wireLen uint32
		want    uint64
	}{
		{"without GRO a frame is a packet", false, tcp, 14 + 20 + 20 + 10*1460, 1},
		{"MTU-sized", true, tcp, 1514, 1},
		{"ten full TCP segments", true, tcp, 14 + 40 + 10*1460, 10},
		{"and a short one", true, tcp, 14 + 40 + 10*1460 + 1, 11},
		{"UDP", true, udp, 14 + 28 + 3*1472, 3},
		{"no transport header: one", true, esp, 5000, 1},
	} {
		tl := newTally([][]byte{[]byte("0123456789abcdef")}, nil)
		tl.gro, tl.mtu = c.gro, 1500
		tl.add(c.frame, c.wireLen, false)
		tl.add(c.frame, c.wireLen, true) // sent frames count once
		var r Result
		tl.fill(&r)
		if r.InSegs != c.want || r.Out != 1 || r.In != 1 {
			t.Errorf("%s: in %d as %d segments, out %d; want 1 as %d, 1", c.name, r.In, r.InSegs, r.Out, c.want)
		}
	}
}
