package profile

import (
	"bytes"
	"testing"
)

func lostRecord(n uint64) []byte {
	b := make([]byte, headerSize+16)
	ne.PutUint32(b[0:], recordLost)
	ne.PutUint16(b[6:], uint16(len(b)))
	ne.PutUint64(b[headerSize:], 7) // id
	ne.PutUint64(b[headerSize+8:], n)
	return b
}

// writeRing writes records into a ring of size bytes starting at byte
// counter start, as the kernel does, and returns the data and the head.
func writeRing(size int, start uint64, recs ...[]byte) ([]byte, uint64) {
	data := make([]byte, size)
	head := start
	for _, r := range recs {
		for i, c := range r {
			data[(head+uint64(i))%uint64(size)] = c
		}
		head += uint64(len(r))
	}
	return data, head
}

func TestReadRing(t *testing.T) {
	s1 := marshalSample(rawSample{pid: 10, tid: 11, cpu: 1, period: 1001}, []uint64{contextKernel, 0xffffffff81000010, 0xffffffff81000020, contextUser, 0x401000})
	s2 := marshalSample(rawSample{pid: 20, tid: 20, cpu: 0, period: 999}, []uint64{contextUser, 0x402000, 0x403000})
	lost := lostRecord(5)
	tests := []struct {
		name    string
		size    int
		start   uint64
		recs    [][]byte
		samples int
		lost    uint64
	}{
		{"empty", 256, 0, nil, 0, 0},
		{"contiguous", 512, 0, [][]byte{s1, s2, lost}, 2, 5},
		{"wraps inside a record", 256, 256 - 24, [][]byte{s1, s2}, 2, 0},
		{"wraps at a record boundary", 256, 256 - uint64(len(s1)), [][]byte{s1, s2}, 2, 0},
		{"counters far past the size", 256, 1<<40 + 200, [][]byte{s2, lost, s1}, 2, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, head := writeRing(tt.size, tt.start, tt.recs...)
			c := newCollector(fakeProcs{})
			var scratch []byte
			var got [][]byte
			tail, err := readRing(data, tt.start, head, &scratch, func(rec []byte) {
				got = append(got, bytes.Clone(rec))
				c.record(rec)
			})
			if err != nil {
				t.Fatal(err)
			}
			if tail != head {
				t.Errorf("tail %d, want head %d", tail, head)
			}
			if len(got) != len(tt.recs) {
				t.Fatalf("%d records, want %d", len(got), len(tt.recs))
			}
			for i := range got {
				if !bytes.Equal(got[i], tt.recs[i]) {
					t.Errorf("record %d differs after the ring", i)
				}
			}
			if int(c.samples) != tt.samples || c.lost != tt.lost || c.bad != 0 {
				t.Errorf("samples %d lost %d bad %d, want %d, %d, 0", c.samples, c.lost, c.bad, tt.samples, tt.lost)
			}
		})
	}
}

func TestReadRingErrors(t *testing.T) {
	good := marshalSample(rawSample{pid: 1}, []uint64{contextUser, 0x401000})
	zero := make([]byte, 16) // size 0 in the header
	tests := []struct {
		name       string
		size       int
		tail, head uint64
		data       []byte
	}{
		{"not a power of two", 100, 0, 8, nil},
		{"overrun", 256, 0, 512, nil},
		{"zero size record", 256, 0, 16, zero},
		{"record beyond head", 256, 0, uint64(len(good)) - 8, good},
		{"truncated header", 256, 0, 4, good},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := make([]byte, tt.size)
			copy(data, tt.data)
			var scratch []byte
			n := 0
			tail, err := readRing(data, tt.tail, tt.head, &scratch, func([]byte) { n++ })
			if err == nil {
				t.Fatalf("no error (tail %d, %d records)", tail, n)
			}
		})
	}
}

func TestParseSample(t *testing.T) {
	chain := []uint64{contextKernel, 0xffffffff81000010, 0xffffffff81000020, contextUser, 0x401000, 0x402000, contextGuest, 0x1234}
	rec := marshalSample(rawSample{pid: 42, tid: 43, time: 99, cpu: 3, period: 1234}, chain)
	s, err := parseSample(rec)
	if err != nil {
		t.Fatal(err)
	}
	if s.pid != 42 || s.tid != 43 || s.time != 99 || s.cpu != 3 || s.period != 1234 || s.nr() != len(chain) {
		t.Errorf("parsed %+v", s)
	}
	fr := splitChain(&s, nil)
	want := []frame{
		{addr: 0xffffffff81000010, kernel: true, exact: true},
		{addr: 0xffffffff81000020, kernel: true},
		{addr: 0x401000},
		{addr: 0x402000},
	}
	if len(fr) != len(want) {
		t.Fatalf("frames %+v, want %+v", fr, want)
	}
	for i := range want {
		if fr[i] != want[i] {
			t.Errorf("frame %d = %+v, want %+v", i, fr[i], want[i])
		}
	}
	// A callchain count larger than the record is refused.
	ne.PutUint64(rec[headerSize+40:], 1000)
	if _, err := parseSample(rec); err == nil {
		t.Error("an oversized callchain count was accepted")
	}
	if _, err := parseSample(rec[:20]); err == nil {
		t.Error("a short record was accepted")
	}
}

// FuzzRecords feeds arbitrary bytes through the ring reader and the
// record parsers: they must not panic.
func FuzzRecords(f *testing.F) {
	f.Add(marshalSample(rawSample{pid: 1, cpu: 1, period: 1}, []uint64{contextKernel, 0xffffffff81000000, contextUser, 0x400000}), uint8(0))
	f.Add(lostRecord(3), uint8(9))
	f.Fuzz(func(t *testing.T, b []byte, shift uint8) {
		if len(b) > 4096 {
			return
		}
		data, head := writeRing(4096, uint64(shift)*8, b)
		c := newCollector(fakeProcs{})
		var scratch []byte
		_, _ = readRing(data, uint64(shift)*8, head, &scratch, c.record)
		p := c.build(buildInfo{frequency: 999, cpus: 1})
		if err := p.CheckValid(); err != nil {
			t.Fatal(err)
		}
	})
}
