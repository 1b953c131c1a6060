package lbnet

import (
	"encoding/binary"
	"testing"
)

// TestSYNPacket: the SYN's headers, and checksums that verify (the sum
// over the header, with the checksum in it, is 0xffff).
func TestSYNPacket(t *testing.T) {
	b := make([]byte, 40)
	src, dst := ClientFWIP.As4(), VIP.As4()
	synPacket(b, src, dst, 40000, 80, 0xdeadbeef)
	if b[0] != 0x45 || binary.BigEndian.Uint16(b[2:]) != 40 || b[9] != 6 {
		t.Fatalf("IP header % x", b[:20])
	}
	if ipChecksum(b[:20], 0) != 0 {
		t.Errorf("IP checksum does not verify: % x", b[:20])
	}
	if binary.BigEndian.Uint16(b[20:]) != 40000 || binary.BigEndian.Uint16(b[22:]) != 80 || b[33] != 0x02 || binary.BigEndian.Uint32(b[24:]) != 0xdeadbeef {
		t.Errorf("TCP header % x", b[20:])
	}
	var ph uint32
	for i := 0; i < 4; i += 2 {
		ph += uint32(binary.BigEndian.Uint16(src[i:])) + uint32(binary.BigEndian.Uint16(dst[i:]))
	}
	if ipChecksum(b[20:], ph+6+20) != 0 {
		t.Errorf("TCP checksum does not verify: % x", b[20:])
	}
	// A known vector: RFC 1071's example words sum to 0xddf2, checksum 0x220d.
	if got := ipChecksum([]byte{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7}, 0); got != 0x220d {
		t.Errorf("RFC 1071 example: %#x, want 0x220d", got)
	}
}

func TestCPUMask(t *testing.T) {
	for _, tt := range []struct {
		cpu  int
		want string
	}{{0, "00000001"}, {1, "00000002"}, {31, "80000000"}, {33, "00000002,00000000"}} {
		if got := cpuMask(tt.cpu); got != tt.want {
			t.Errorf("cpuMask(%d) = %q, want %q", tt.cpu, got, tt.want)
		}
	}
}
