package suite

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"slices"
)

// schedule returns the order of the cells for every repeat: each repeat
// runs every cell once, in its own order drawn from a generator seeded
// with seed, so that no cell always follows the same neighbour (carry-over)
// or always runs at the same point of a slow drift. The same cells and seed
// give the same schedule (--seed replays a run's order).
func schedule(cells []cell, repeats int, seed uint64) [][]cell {
	rng := mrand.New(mrand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([][]cell, repeats)
	for r := range out {
		cs := slices.Clone(cells)
		rng.Shuffle(len(cs), func(i, j int) { cs[i], cs[j] = cs[j], cs[i] })
		out[r] = cs
	}
	return out
}

// newSeed returns a random non-zero seed.
func newSeed() (uint64, error) {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			return 0, fmt.Errorf("draw a seed: %w", err)
		}
		if s := binary.LittleEndian.Uint64(b[:]); s != 0 {
			return s, nil
		}
	}
}

// newToken returns a random per-run secret for the suite's servers and
// clients (CNIBENCH_TOKEN).
func newToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("draw a token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
