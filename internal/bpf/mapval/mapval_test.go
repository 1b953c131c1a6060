package mapval

import (
	"encoding/binary"
	"net/netip"
	"testing"
)

func TestAddr4AndPort(t *testing.T) {
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], Addr4(netip.MustParseAddr("198.19.0.10")))
	if b != [4]byte{198, 19, 0, 10} {
		t.Errorf("Addr4 bytes %v", b)
	}
	var p [2]byte
	binary.NativeEndian.PutUint16(p[:], Port(8080))
	if p != [2]byte{0x1f, 0x90} {
		t.Errorf("Port bytes % x, want 1f 90", p)
	}
}
