// Package maglev builds Maglev consistent-hashing lookup tables (Eisenbud
// et al., NSDI 2016), as the L4 load balancer's BPF program indexes them:
// slot hash(flow) % M holds the backend of every flow that hashes there.
//
// The construction follows Katran's O(N) variant: each backend keeps only
// its (offset, skip) pair and its next position, not a full permutation of
// M slots. Backends are sorted by name first and hashed with a fixed
// function (FNV-1a, 128 bits: offset from one half, skip from the other),
// so every node that builds a table for the same backends gets the same
// table, as Cilium requires.
package maglev

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
)

// DefaultSize is the table size M Cilium uses by default (a prime); with
// 100 backends the slot shares differ by at most about 1 %.
const DefaultSize = 16381

// MaxSize bounds M (a table of int32 backend indexes: 4 MiB).
const MaxSize = 1 << 20

// Table returns the lookup table of size m for backends: entry s is the
// index, into the sorted backends, of slot s's backend. m must be a prime
// at least as large as the number of backends; names must be unique and
// non-empty. sorted is backends in the order the indexes refer to.
func Table(backends []string, m int) (table []int32, sorted []string, err error) {
	if len(backends) == 0 {
		return nil, nil, errors.New("maglev: no backends")
	}
	if m < len(backends) || m > MaxSize || !isPrime(m) {
		return nil, nil, fmt.Errorf("maglev: table size %d must be a prime between the number of backends (%d) and %d", m, len(backends), MaxSize)
	}
	sorted = slices.Clone(backends)
	slices.Sort(sorted)
	for i, b := range sorted {
		if b == "" {
			return nil, nil, errors.New("maglev: empty backend name")
		}
		if i > 0 && sorted[i-1] == b {
			return nil, nil, fmt.Errorf("maglev: backend %q listed twice", b)
		}
	}
	n := len(sorted)
	offset, skip, next := make([]uint64, n), make([]uint64, n), make([]uint64, n)
	for i, b := range sorted {
		offset[i], skip[i] = offsetAndSkip(b, uint64(m))
	}
	table = make([]int32, m)
	for i := range table {
		table[i] = -1
	}
	for filled := 0; ; {
		for i := range n {
			// Backend i's next preferred slot that is still free.
			c := (offset[i] + next[i]*skip[i]) % uint64(m)
			for table[c] >= 0 {
				next[i]++
				c = (offset[i] + next[i]*skip[i]) % uint64(m)
			}
			table[c] = int32(i)
			next[i]++
			if filled++; filled == m {
				return table, sorted, nil
			}
		}
	}
}

// offsetAndSkip derives a backend's permutation: offset in [0, m), skip in
// [1, m), so that (offset + j*skip) % m visits every slot once (m prime).
func offsetAndSkip(name string, m uint64) (uint64, uint64) {
	h := fnv.New128a()
	h.Write([]byte(name))
	sum := h.Sum(nil)
	h1, h2 := binary.BigEndian.Uint64(sum[:8]), binary.BigEndian.Uint64(sum[8:])
	return h1 % m, h2%(m-1) + 1
}

func isPrime(n int) bool {
	if n < 2 {
		return false
	}
	for d := 2; d*d <= n; d++ {
		if n%d == 0 {
			return false
		}
	}
	return true
}

// Shares counts the slots each backend of a table holds (index: backend).
func Shares(table []int32, backends int) []int {
	out := make([]int, backends)
	for _, b := range table {
		if b >= 0 && int(b) < backends {
			out[b]++
		}
	}
	return out
}
