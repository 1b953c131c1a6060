package profile

import (
	"encoding/binary"
	"fmt"
)

// The perf ABI pieces this package parses (include/uapi/linux/perf_event.h),
// spelt out here so that the parsers build and are tested on every OS.
const (
	recordLost        = 2  // PERF_RECORD_LOST: {u64 id; u64 lost}
	recordThrottle    = 5  // PERF_RECORD_THROTTLE
	recordUnthrottle  = 6  // PERF_RECORD_UNTHROTTLE
	recordSample      = 9  // PERF_RECORD_SAMPLE
	recordLostSamples = 13 // PERF_RECORD_LOST_SAMPLES: {u64 lost}

	sampleIP        = 1 << 0 // PERF_SAMPLE_IP
	sampleTID       = 1 << 1 // PERF_SAMPLE_TID
	sampleTime      = 1 << 2 // PERF_SAMPLE_TIME
	sampleCallchain = 1 << 5 // PERF_SAMPLE_CALLCHAIN
	sampleCPU       = 1 << 7 // PERF_SAMPLE_CPU
	samplePeriod    = 1 << 8 // PERF_SAMPLE_PERIOD

	// sampleType is the layout parseSample reads: ip, pid/tid, time,
	// cpu/res, period, nr, ips[nr].
	sampleType = sampleIP | sampleTID | sampleTime | sampleCPU | samplePeriod | sampleCallchain

	contextHV          = ^uint64(32 - 1)   // PERF_CONTEXT_HV (-32)
	contextKernel      = ^uint64(128 - 1)  // PERF_CONTEXT_KERNEL (-128)
	contextUser        = ^uint64(512 - 1)  // PERF_CONTEXT_USER (-512)
	contextGuest       = ^uint64(2048 - 1) // PERF_CONTEXT_GUEST (-2048)
	contextGuestKernel = ^uint64(2176 - 1) // PERF_CONTEXT_GUEST_KERNEL (-2176)
	contextGuestUser   = ^uint64(2560 - 1) // PERF_CONTEXT_GUEST_USER (-2560)
	contextMax         = ^uint64(4095 - 1) // PERF_CONTEXT_MAX (-4095): markers are >= this

	headerSize = 8 // struct perf_event_header {u32 type; u16 misc; u16 size}
)

// ne is the byte order of the records: the kernel writes them in the host's.
var ne = binary.NativeEndian

// readRing calls fn for every record in the ring's data area between tail
// and head (free-running byte counters, as in perf_event_mmap_page) and
// returns the new tail. data's length is a power of two. A record that
// wraps around the end of data is copied into *scratch so that fn always
// sees it contiguous; fn must not keep rec. A record with a size below the
// header's or beyond head ends the walk with an error (the ring is then
// resynchronised by the caller setting tail to head).
func readRing(data []byte, tail, head uint64, scratch *[]byte, fn func(rec []byte)) (uint64, error) {
	size := uint64(len(data))
	if size == 0 || size&(size-1) != 0 {
		return tail, fmt.Errorf("ring size %d is not a power of two", size)
	}
	if head-tail > size {
		return head, fmt.Errorf("ring overrun: head %d tail %d size %d", head, tail, size)
	}
	for tail < head {
		if head-tail < headerSize {
			return head, fmt.Errorf("truncated record header at %d", tail)
		}
		off := tail & (size - 1)
		var hdr [headerSize]byte
		copyRing(hdr[:], data, off)
		rsize := uint64(ne.Uint16(hdr[6:8]))
		if rsize < headerSize || rsize > head-tail {
			return head, fmt.Errorf("bad record size %d at %d (head %d)", rsize, tail, head)
		}
		var rec []byte
		if off+rsize <= size {
			rec = data[off : off+rsize]
		} else {
			if cap(*scratch) < int(rsize) {
				*scratch = make([]byte, rsize)
			}
			rec = (*scratch)[:rsize]
			copyRing(rec, data, off)
		}
		fn(rec)
		tail += rsize
	}
	return tail, nil
}

// copyRing copies len(dst) bytes from the ring data starting at off,
// wrapping at the end.
func copyRing(dst, data []byte, off uint64) {
	n := copy(dst, data[off:])
	copy(dst[n:], data)
}

// recordType returns a record's type from its header.
func recordType(rec []byte) uint32 { return ne.Uint32(rec[0:4]) }

// rawSample is one PERF_RECORD_SAMPLE of layout sampleType.
type rawSample struct {
	pid, tid uint32
	time     uint64
	cpu      uint32
	period   uint64
	// chain is the raw callchain, context markers included; it aliases
	// the record.
	chain []byte
}

// nr is the number of entries in the callchain.
func (s *rawSample) nr() int { return len(s.chain) / 8 }

// ip returns callchain entry i.
func (s *rawSample) ip(i int) uint64 { return ne.Uint64(s.chain[i*8:]) }

// parseSample decodes a PERF_RECORD_SAMPLE written with sampleType.
func parseSample(rec []byte) (rawSample, error) {
	const fixed = headerSize + 8 + 8 + 8 + 8 + 8 + 8 // ip pid/tid time cpu period nr
	if len(rec) < fixed {
		return rawSample{}, fmt.Errorf("sample record of %d bytes, want at least %d", len(rec), fixed)
	}
	b := rec[headerSize:]
	s := rawSample{
		pid:    ne.Uint32(b[8:12]),
		tid:    ne.Uint32(b[12:16]),
		time:   ne.Uint64(b[16:24]),
		cpu:    ne.Uint32(b[24:28]),
		period: ne.Uint64(b[32:40]),
	}
	nr := ne.Uint64(b[40:48])
	if nr > uint64(len(b)-48)/8 {
		return rawSample{}, fmt.Errorf("sample callchain of %d entries does not fit its %d-byte record", nr, len(rec))
	}
	s.chain = b[48 : 48+nr*8]
	return s, nil
}

// parseLost returns the count of a PERF_RECORD_LOST or
// PERF_RECORD_LOST_SAMPLES record.
func parseLost(rec []byte) (uint64, error) {
	switch t := recordType(rec); {
	case t == recordLost && len(rec) >= headerSize+16:
		return ne.Uint64(rec[headerSize+8:]), nil
	case t == recordLostSamples && len(rec) >= headerSize+8:
		return ne.Uint64(rec[headerSize:]), nil
	}
	return 0, fmt.Errorf("lost record of type %d and %d bytes is malformed", recordType(rec), len(rec))
}

// frame is one resolved callchain entry.
type frame struct {
	addr   uint64
	kernel bool
	// exact is true for the sampled IP itself; other entries are return
	// addresses and are symbolised at addr-1.
	exact bool
}

// splitChain turns a raw callchain into frames, leaf first, dropping the
// context markers and the hypervisor and guest contexts.
func splitChain(s *rawSample, dst []frame) []frame {
	dst = dst[:0]
	ctx := contextKernel
	first := true
	for i := range s.nr() {
		ip := s.ip(i)
		if ip >= contextMax {
			ctx = ip
			continue
		}
		switch ctx {
		case contextKernel, contextUser:
			dst = append(dst, frame{addr: ip, kernel: ctx == contextKernel, exact: first})
			first = false
		}
	}
	return dst
}

// marshalChain is the inverse of parseSample for tests and fuzzing: it
// encodes a sample record.
func marshalSample(s rawSample, chain []uint64) []byte {
	size := headerSize + 48 + 8*len(chain)
	b := make([]byte, size)
	ne.PutUint32(b[0:], recordSample)
	ne.PutUint16(b[6:], uint16(size))
	p := b[headerSize:]
	ne.PutUint64(p[0:], 0)
	ne.PutUint32(p[8:], s.pid)
	ne.PutUint32(p[12:], s.tid)
	ne.PutUint64(p[16:], s.time)
	ne.PutUint32(p[24:], s.cpu)
	ne.PutUint64(p[32:], s.period)
	ne.PutUint64(p[40:], uint64(len(chain)))
	for i, ip := range chain {
		ne.PutUint64(p[48+8*i:], ip)
	}
	return b
}
