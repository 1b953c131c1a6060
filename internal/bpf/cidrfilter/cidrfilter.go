package cidrfilter

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/cnibench/cnibench/internal"
)

// ErrNotSupported is wrapped by every error that means "this machine cannot
// run the BPF egress filter". Check it with errors.Is.
var ErrNotSupported = internal.ErrNotSupported

// Kind selects the lookup structure.
type Kind int

// The lookup structures.
const (
	KindLPM Kind = iota + 1
	KindHash
)

func (k Kind) String() string {
	switch k {
	case KindLPM:
		return "lpm-trie"
	case KindHash:
		return "hash-per-prefix-length"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// DefaultBatch is the number of elements per BPF_MAP_UPDATE_BATCH call.
const DefaultBatch = 65536

// Counters are the program's packet counts, summed over CPUs.
type Counters struct {
	// Dropped counts packets whose destination is in a deny CIDR.
	Dropped uint64
	// Passed counts IPv4 packets checked and passed on.
	Passed uint64
	// NotIPv4 counts packets passed on unchecked (ARP, IPv6, truncated).
	NotIPv4 uint64
}

// LoadStats describe how Load filled the maps.
type LoadStats struct {
	// Batches is the number of BPF_MAP_UPDATE_BATCH calls.
	Batches int
	// BatchSize is the number of elements per call (the last may be less).
	BatchSize int
	// MaxEntries is the deny map's max_entries.
	MaxEntries uint32
}

// prefixKey is the key of both deny maps (struct prefix_key in egress.c):
// the prefix length in host order, then the address in network order. It
// has no padding, so slices of it are passed to the kernel without copying.
type prefixKey struct {
	PrefixLen uint32
	Addr      [4]byte
}

func (k prefixKey) String() string {
	return netip.PrefixFrom(netip.AddrFrom4(k.Addr), int(k.PrefixLen)).String()
}

// keyOf encodes p as a deny-map key, the address masked to the prefix
// length (the LPM trie ignores the bits past it; the hash needs them zero).
func keyOf(p netip.Prefix) (prefixKey, error) {
	if !p.IsValid() || !p.Addr().Is4() {
		return prefixKey{}, fmt.Errorf("deny CIDR %v: not an IPv4 prefix", p)
	}
	bits := p.Bits()
	a := p.Addr().As4()
	v := binary.BigEndian.Uint32(a[:])
	if bits < maxPrefixLen {
		v &^= 0xffffffff >> bits // bits == 0: all cleared
	}
	k := prefixKey{PrefixLen: uint32(bits)}
	binary.BigEndian.PutUint32(k.Addr[:], v)
	return k, nil
}

// keysOf encodes cidrs; it rejects non-IPv4 prefixes and duplicates (a
// batch update would overwrite a duplicate and the set would hold fewer
// entries than Rules says). Sorted input, as the generator makes, is
// checked in one pass; other input with a set.
func keysOf(cidrs []netip.Prefix) ([]prefixKey, error) {
	keys := make([]prefixKey, len(cidrs))
	sorted := true
	for i, p := range cidrs {
		k, err := keyOf(p)
		if err != nil {
			return nil, err
		}
		keys[i] = k
		if i > 0 && sorted && !keys[i-1].less(k) {
			sorted = false
		}
	}
	if sorted {
		return keys, nil
	}
	seen := make(map[prefixKey]struct{}, len(keys))
	for _, k := range keys {
		if _, dup := seen[k]; dup {
			return nil, fmt.Errorf("deny CIDR %v: duplicate", k)
		}
		seen[k] = struct{}{}
	}
	return keys, nil
}

// less orders keys by address, then prefix length.
func (k prefixKey) less(o prefixKey) bool {
	a, b := binary.BigEndian.Uint32(k.Addr[:]), binary.BigEndian.Uint32(o.Addr[:])
	return a < b || a == b && k.PrefixLen < o.PrefixLen
}

// maxEntries is the deny map's max_entries for n CIDRs: n plus headroom
// for Add (n/64, at least 64), rounded up to a multiple of 1024.
func maxEntries(n int) (uint32, error) {
	if n < 0 {
		return 0, fmt.Errorf("negative CIDR count %d", n)
	}
	head := max(n/64, 64)
	total := uint64(n+head+1023) / 1024 * 1024
	if total > 1<<31 {
		return 0, fmt.Errorf("%d CIDRs: too many for one BPF map", n)
	}
	return uint32(total), nil
}

// maxPrefixLen is the longest IPv4 prefix.
const maxPrefixLen = 32

// hashLens is the value of the hash_lens map (struct hash_lens in egress.c).
type hashLens struct {
	N   uint32
	Len [maxPrefixLen + 1]uint8
	Pad [3]uint8
}

// lengthSet counts the CIDRs of each prefix length in the hash map, so that
// the program probes only the lengths present.
type lengthSet [maxPrefixLen + 1]int

// add counts one prefix of length l and reports whether l was absent.
func (s *lengthSet) add(l uint32) bool {
	s[l]++
	return s[l] == 1
}

// remove uncounts one prefix of length l and reports whether l is now absent.
func (s *lengthSet) remove(l uint32) bool {
	if s[l] == 0 {
		return false
	}
	s[l]--
	return s[l] == 0
}

// value lists the present lengths, longest first.
func (s *lengthSet) value() hashLens {
	var v hashLens
	for l := maxPrefixLen; l >= 0; l-- {
		if s[l] > 0 {
			v.Len[v.N] = uint8(l)
			v.N++
		}
	}
	return v
}

// Lengths returns the prefix lengths present in cidrs, longest first (what
// the hash program probes, in order).
func Lengths(cidrs []netip.Prefix) []int {
	var s lengthSet
	for _, p := range cidrs {
		if p.IsValid() && p.Addr().Is4() {
			s.add(uint32(p.Bits()))
		}
	}
	v := s.value()
	out := make([]int, v.N)
	for i := range out {
		out[i] = int(v.Len[i])
	}
	return out
}
