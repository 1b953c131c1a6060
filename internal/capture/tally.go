package capture

import "bytes"

// maxKeys bounds how many distinct protocol keys a capture keeps; frames of
// further keys are counted under otherKey's name.
const maxKeys = 64

// otherKey collects the frames of keys past maxKeys.
func otherKey() protoKey { return protoKey{etherType: 0xffff} }

// tally counts and scans the frames of one capture. It is used by one
// goroutine at a time.
type tally struct {
	markers [][]byte
	prefer  []uint16
	// gro: the interface merges received packets (GRO) of up to mtu
	// bytes each before the capture sees them.
	gro bool
	mtu int
	// filter selects the frames counted in matched, matchedMarker and
	// matchedBy (none when empty).
	filter Filter

	frames, bytes, in, inSegs, out, marker uint64
	matched, matchedMarker                 uint64

	byProto, markerBy, matchedBy map[protoKey]uint64
}

func newTally(markers [][]byte, prefer []uint16) *tally {
	return &tally{
		markers:   markers,
		prefer:    prefer,
		byProto:   make(map[protoKey]uint64),
		markerBy:  make(map[protoKey]uint64),
		matchedBy: make(map[protoKey]uint64),
	}
}

// add counts one frame: data is what was captured of it (from its
// Ethernet header), wireLen its whole length.
func (t *tally) add(data []byte, wireLen uint32, outgoing bool) {
	t.frames++
	t.bytes += uint64(wireLen)
	f := ParseFrame(data)
	if outgoing {
		t.out++
	} else {
		t.in++
		t.inSegs += t.segments(f, wireLen)
	}
	k := f.key(t.prefer)
	if _, ok := t.byProto[k]; !ok && len(t.byProto) >= maxKeys {
		k = otherKey()
	}
	t.byProto[k]++
	match := t.filter.MatchFrame(data, f)
	if match {
		t.matched++
		t.matchedBy[k]++
	}
	if t.hasMarker(data) {
		t.marker++
		t.markerBy[k]++
		if match {
			t.matchedMarker++
		}
	}
}

// segments is how many packets a received frame was on the wire: 1, or,
// with GRO, at least its TCP or UDP payload over the most that one packet
// of the MTU carries with the frame's headers. It never counts more than
// GRO merged (a segment carries at most that much), so a coverage computed
// with it errs low.
func (t *tally) segments(f Frame, wireLen uint32) uint64 {
	if !t.gro || f.Payload == 0 || int(wireLen) <= f.L3+t.mtu {
		return 1
	}
	per := t.mtu - (f.Payload - f.L3)
	if per <= 0 {
		return 1
	}
	return uint64((int(wireLen) - f.Payload + per - 1) / per)
}

func (t *tally) hasMarker(data []byte) bool {
	for _, m := range t.markers {
		if bytes.Index(data, m) >= 0 {
			return true
		}
	}
	return false
}

// fill copies the counts into r.
func (t *tally) fill(r *Result) {
	r.Frames, r.Bytes, r.In, r.InSegs, r.Out, r.MarkerFrames = t.frames, t.bytes, t.in, t.inSegs, t.out, t.marker
	r.ByProto = names(t.byProto)
	r.MarkerByProto = names(t.markerBy)
	if !t.filter.Empty() {
		r.Filter = t.filter.String()
		r.Matched, r.MatchedMarker = t.matched, t.matchedMarker
		r.MatchedByProto = names(t.matchedBy)
	}
}

func names(m map[protoKey]uint64) map[string]uint64 {
	out := make(map[string]uint64, len(m))
	for k, n := range m {
		name := "other"
		if k != otherKey() {
			name = k.String()
		}
		out[name] += n
	}
	return out
}
