package server

// seqWindow is how far behind the newest sequence number a late datagram
// is still told apart from a duplicate.
const seqWindow = 1024

// seqTracker counts one flow's measured datagrams from their sequence
// numbers, as iperf3 does: received, gaps (sequence numbers skipped and not
// filled later), duplicates and reordered (late) arrivals.
type seqTracker struct {
	started bool
	max     uint64
	// Recv counts every arrival; Bytes the bytes of unique ones.
	Recv, Bytes, Gaps, Dups, Reordered uint64
	seen                               [seqWindow / 64]uint64
}

func (t *seqTracker) bit(seq uint64) (word int, mask uint64) {
	i := seq % seqWindow
	return int(i / 64), 1 << (i % 64)
}

// add records one arrival of seq carrying n bytes.
func (t *seqTracker) add(seq uint64, n int) {
	t.Recv++
	switch {
	case !t.started:
		t.started, t.max = true, seq
	case seq > t.max:
		d := seq - t.max
		t.Gaps += d - 1
		if d >= seqWindow {
			t.seen = [seqWindow / 64]uint64{}
		} else {
			for s := t.max + 1; s < seq; s++ {
				w, m := t.bit(s)
				t.seen[w] &^= m
			}
		}
		t.max = seq
	case t.max-seq >= seqWindow:
		// Too late to tell from a duplicate: count it as reordered.
		t.Reordered++
		if t.Gaps > 0 {
			t.Gaps--
		}
		t.Bytes += uint64(n)
		return
	default:
		w, m := t.bit(seq)
		if t.seen[w]&m != 0 {
			t.Dups++
			return
		}
		if seq != t.max {
			t.Reordered++
			if t.Gaps > 0 {
				t.Gaps--
			}
		}
	}
	w, m := t.bit(seq)
	t.seen[w] |= m
	t.Bytes += uint64(n)
}

// Unique is the number of distinct datagrams received.
func (t *seqTracker) Unique() uint64 { return t.Recv - t.Dups }
