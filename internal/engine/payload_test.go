package engine

import (
	"bytes"
	"testing"
)

func TestPayloadMarkerShape(t *testing.T) {
	if len(PayloadMarker) != 40 {
		t.Errorf("PayloadMarker is %d bytes, want 40", len(PayloadMarker))
	}
	for i, c := range PayloadMarker {
		if c < 0x21 || c > 0x7e {
			t.Fatalf("PayloadMarker byte %d is %#x: not printable ASCII", i, c)
		}
	}
	if PayloadWindow+1 > 200 {
		t.Errorf("a marker is only guaranteed in every %d bytes, want at most 200", PayloadWindow+1)
	}
}

func TestFillPayloadLeavesShortAndOtherBytes(t *testing.T) {
	short := bytes.Repeat([]byte{'x'}, len(PayloadMarker)-1)
	FillPayload(short)
	if !bytes.Equal(short, bytes.Repeat([]byte{'x'}, len(short))) {
		t.Errorf("a buffer shorter than the marker was changed: %q", short)
	}
	b := make([]byte, 300)
	FillPayload(b)
	want := make([]byte, 300)
	copy(want[0:], PayloadMarker)
	copy(want[128:], PayloadMarker)
	copy(want[256:], PayloadMarker) // 256+40 <= 300: no tail copy needed
	if !bytes.Equal(b, want) {
		t.Errorf("FillPayload(300 bytes) =\n%q\nwant\n%q", b, want)
	}
	b = make([]byte, 130)
	FillPayload(b)
	want = make([]byte, 130)
	copy(want[0:], PayloadMarker)
	copy(want[90:], PayloadMarker) // the tail copy ends at the buffer's end
	if !bytes.Equal(b, want) {
		t.Errorf("FillPayload(130 bytes) =\n%q\nwant\n%q", b, want)
	}
}

// windowsHoldMarker checks that every window of w bytes of s holds a whole
// copy of the marker, and returns the first offset of one that does not.
func windowsHoldMarker(s []byte, w int) (int, bool) {
	m := PayloadMarker
	next := len(s) // the first copy starting at or after i, scanning down
	for i := len(s) - 1; i >= 0; i-- {
		if i+len(m) <= len(s) && bytes.Equal(s[i:i+len(m)], m) {
			next = i
		}
		if i+w <= len(s) && next+len(m) > i+w {
			return i, false
		}
	}
	return 0, true
}

func TestFillPayloadEveryWindow(t *testing.T) {
	for _, size := range []int{40, 41, 87, 128, 129, 167, 168, 200, 255, 256, 257, 1000, 1448, 1472, 16 << 10, 65536, 128<<10 + 39} {
		buf := make([]byte, size)
		FillPayload(buf)
		// One buffer, and a stream of the same buffer sent back to back
		// (tcp_stream), which a TCP segment may cut anywhere.
		stream := bytes.Repeat(buf, 3)
		if len(buf) >= PayloadWindow+1 {
			if off, ok := windowsHoldMarker(buf, PayloadWindow+1); !ok {
				t.Errorf("size %d: the %d bytes at %d hold no whole marker", size, PayloadWindow+1, off)
			}
			if off, ok := windowsHoldMarker(buf, 200); !ok {
				t.Errorf("size %d: the 200 bytes at %d hold no whole marker", size, off)
			}
		}
		if off, ok := windowsHoldMarker(stream, PayloadWindow+1); !ok {
			t.Errorf("size %d, back to back: the %d bytes at %d hold no whole marker", size, PayloadWindow+1, off)
		}
	}
}

func TestFillPayloadAfterKeepsHeader(t *testing.T) {
	// udp_stream: the per-datagram header must survive, and the marker
	// still appear in the rest.
	buf := make([]byte, 1472)
	FillPayloadAfter(buf, UDPStreamHeader)
	PutUDPHeader(buf, 0x1122334455667788, 42, 3)
	buf[UDPOffPhase] = PhaseMeasured
	cookie, seq, flow, ok := ParseUDPHeader(buf)
	if !ok || cookie != 0x1122334455667788 || seq != 42 || flow != 3 || buf[UDPOffPhase] != PhaseMeasured {
		t.Fatalf("header after fill: cookie %#x seq %d flow %d ok %v phase %d", cookie, seq, flow, ok, buf[UDPOffPhase])
	}
	if !bytes.Equal(buf[UDPStreamHeader:UDPStreamHeader+len(PayloadMarker)], PayloadMarker) {
		t.Errorf("no marker right after the udp_stream header")
	}
	if off, ok := windowsHoldMarker(buf[UDPStreamHeader:], PayloadWindow+1); !ok {
		t.Errorf("udp_stream payload: no whole marker in the window at %d", off)
	}
	// Headers longer than the buffer, and tiny buffers, are no error.
	FillPayloadAfter(make([]byte, 5), UDPRRHeader)
	FillPayloadAfter(make([]byte, UDPRRHeader), UDPRRHeader)
}
