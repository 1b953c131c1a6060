package suite

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"slices"
)

// step is one point's turn in a repeat: the point (an index into the
// plan) and its cells in this repeat's order.
type step struct {
	point int
	cells []cell
}

// schedule returns the order of every repeat: each repeat runs every point
// once, in its own order, and every cell of a point once, in its own order,
// all drawn from one generator seeded with seed, so that no cell always
// follows the same neighbour (carry-over) or always runs at the same point
// of a slow drift. The matrix is one point, so its cells are shuffled
// across all datapaths and MTUs; a scenario's points are shuffled, and the
// cells within each (a point is prepared once per repeat). The same plan
// and seed give the same schedule (--seed replays a run's order).
func schedule(points [][]cell, repeats int, seed uint64) [][]step {
	rng := mrand.New(mrand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([][]step, repeats)
	for r := range out {
		order := make([]int, len(points))
		for i := range order {
			order[i] = i
		}
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, p := range order {
			cs := slices.Clone(points[p])
			rng.Shuffle(len(cs), func(i, j int) { cs[i], cs[j] = cs[j], cs[i] })
			out[r] = append(out[r], step{point: p, cells: cs})
		}
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
