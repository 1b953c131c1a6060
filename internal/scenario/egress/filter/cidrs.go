package filter

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"net/netip"
)

// DenyRange is the address space deny CIDRs are drawn from: 240.0.0.0/4 is
// reserved ("future use", RFC 1112) and never routed on a real network, so a
// probe to it can only reach a lab namespace that owns such an address.
var DenyRange = netip.MustParsePrefix("240.0.0.0/4")

// DeniedAddr is the address the scenario's deny sets are drawn around
// (Generate's must): inside a generated deny CIDR for every N. The lab's
// server pod gets it as the address its proofs probe; a cluster's deny
// sets are drawn with it too, so a seed gives the same CIDRs on both.
var DeniedAddr = netip.MustParseAddr("240.0.0.1")

// prefixMix is the weighted prefix-length mix of generated deny CIDRs,
// modelled on public IPv4 blocklists (FireHOL-style lists are dominated by
// single hosts and /24s, with a tail of larger blocks). Weights are out of
// 100. When n is so large that a generated prefix must fit a slot smaller
// than the drawn length allows (see Generate), the length is raised to the
// slot's size, so at 1M CIDRs nothing is shorter than /24 and at 10M nothing
// is shorter than /28.
var prefixMix = [...]struct{ bits, weight int }{
	{32, 40}, {31, 3}, {30, 5}, {29, 5}, {28, 5}, {27, 4}, {26, 4}, {25, 4},
	{24, 20}, {22, 4}, {20, 3}, {18, 1}, {16, 2},
}

// largestSlotBits bounds slots at /16, the shortest prefix in prefixMix.
const largestSlotBits = 16

// Generate returns n non-overlapping IPv4 prefixes inside DenyRange, sorted,
// deterministic for seed (math/rand/v2 PCG), with prefix lengths drawn from
// prefixMix and exactly one of them containing must (the address a probe
// sends to, to prove the filter drops it).
//
// How: DenyRange is cut into equal power-of-two slots, the largest (at most
// /16) of which n fit; n slots are chosen by selection sampling (Knuth's
// algorithm S, in address order, so the result comes out sorted), always
// including must's slot, and each chosen slot holds one prefix of the drawn
// length at a random aligned offset (in must's slot, the one around must).
// The last slot (holding 255.255.255.255) is never used, so every prefix's
// end plus one is representable, as nftables interval sets need.
func Generate(seed uint64, n int, must netip.Addr) ([]netip.Prefix, error) {
	if !must.Is4() || !DenyRange.Contains(must) {
		return nil, fmt.Errorf("generate deny cidrs: must %s is not an IPv4 address inside %s", must, DenyRange)
	}
	space := uint64(1) << (32 - DenyRange.Bits()) // addresses in DenyRange
	if n < 1 || uint64(n) > space-1 {
		return nil, fmt.Errorf("generate deny cidrs: n %d outside 1..%d", n, space-1)
	}
	// slotBits: the largest power of two with n*(2^slotBits) <= space-2^slotBits.
	slotBits := 0
	for b := largestSlotBits; b >= 0; b-- {
		if uint64(n) <= (space>>b)-1 {
			slotBits = b
			break
		}
	}
	slots := (space >> slotBits) - 1 // the last slot is never used
	base := binary.BigEndian.Uint32(DenyRange.Addr().AsSlice())
	m4 := must.As4()
	mustSlot := uint64(binary.BigEndian.Uint32(m4[:])-base) >> slotBits
	if mustSlot >= slots {
		return nil, fmt.Errorf("generate deny cidrs: must %s lies in the last /%d of %s, which is never used", must, 32-slotBits, DenyRange)
	}

	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	// One slot more: a cluster's deny set appends its denied server's /32
	// (incluster.DenySet) without copying a million prefixes.
	out := make([]netip.Prefix, 0, n+1)
	need := uint64(n - 1) // slots still to choose besides must's
	left := slots - 1     // slots still to consider besides must's
	for s := uint64(0); s < slots; s++ {
		if s == mustSlot {
			out = append(out, mustPrefix(rng, must, slotBits))
			continue
		}
		if need == 0 {
			if s > mustSlot {
				break
			}
			continue
		}
		// Algorithm S: choose this slot with probability need/left.
		if rng.Uint64N(left) < need {
			out = append(out, slotPrefix(rng, base+uint32(s<<slotBits), slotBits))
			need--
		}
		left--
	}
	return out, nil
}

// drawBits draws a prefix length from prefixMix, raised so the prefix fits
// a slot of 2^slotBits addresses.
func drawBits(rng *rand.Rand, slotBits int) int {
	r := rng.IntN(100)
	b := 32
	for _, m := range prefixMix {
		if r < m.weight {
			b = m.bits
			break
		}
		r -= m.weight
	}
	return max(b, 32-slotBits)
}

func slotPrefix(rng *rand.Rand, start uint32, slotBits int) netip.Prefix {
	b := drawBits(rng, slotBits)
	hostBits := 32 - b
	// One of the 2^(slotBits-hostBits) aligned blocks in the slot.
	var off uint32
	if k := slotBits - hostBits; k > 0 {
		off = uint32(rng.Uint64N(1<<k)) << hostBits
	}
	return netip.PrefixFrom(addrFrom4(start+off), b)
}

func mustPrefix(rng *rand.Rand, must netip.Addr, slotBits int) netip.Prefix {
	p, _ := must.Prefix(drawBits(rng, slotBits)) // cannot fail: IPv4, 0..32
	return p
}

func addrFrom4(v uint32) netip.Addr {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b)
}

// prefixRange returns the first address of p and the address just after its
// last one, as uint32s (last+1 wraps to 0 only for a prefix ending at
// 255.255.255.255, which Generate never returns).
func prefixRange(p netip.Prefix) (first, next uint32) {
	a := p.Masked().Addr().As4()
	first = binary.BigEndian.Uint32(a[:])
	size := uint64(1) << (32 - p.Bits())
	return first, uint32(uint64(first) + size)
}

// ceilPow2 returns the smallest power of two >= v (1 for v <= 1).
func ceilPow2(v int) int {
	if v <= 1 {
		return 1
	}
	return 1 << bits.Len(uint(v-1))
}
