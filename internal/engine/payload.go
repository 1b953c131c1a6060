package engine

// payloadMarker is the text behind PayloadMarker: ASCII, 40 bytes, and
// unlikely anywhere but in cnibench's own payloads.
const payloadMarker = "cnibench:payload-marker:v1:" + "Q7vK2xRm9TzLp"

// PayloadMarker is written throughout every payload buffer the engine
// sends (FillPayload), so that a capture on the wire can tell whether pod
// traffic crossed it in clear (internal/capture). Do not modify it.
var PayloadMarker = []byte(payloadMarker)

// PayloadMarkerEvery is the distance between the starts of consecutive
// copies of PayloadMarker in a filled buffer.
const PayloadMarkerEvery = 128

// PayloadWindow is the longest stretch of filled payload (within one buffer
// or across consecutive filled buffers of a stream) that may hold no whole
// copy of PayloadMarker: every PayloadWindow+1 consecutive bytes hold one.
const PayloadWindow = PayloadMarkerEvery + len(payloadMarker) - 2

// FillPayload writes PayloadMarker into b every PayloadMarkerEvery bytes
// from its start, and a last copy ending at b's end when the regular ones
// leave a cut-off tail, so that copies start at most PayloadMarkerEvery
// bytes apart within b and across buffers sent back to back. The bytes in
// between are left as they are. A buffer shorter than the marker is left
// alone. Call it once, when a buffer is allocated: never per write.
func FillPayload(b []byte) {
	n := len(payloadMarker)
	off := 0
	for ; off+n <= len(b); off += PayloadMarkerEvery {
		copy(b[off:], payloadMarker)
	}
	if off < len(b) && len(b) >= n {
		copy(b[len(b)-n:], payloadMarker)
	}
}

// FillPayloadAfter fills b past its first hdr bytes (a protocol header the
// engine writes itself), if there is anything past them.
func FillPayloadAfter(b []byte, hdr int) {
	FillPayload(b[min(hdr, len(b)):])
}
