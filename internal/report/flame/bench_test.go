package flame

import (
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// bigProfile has n distinct stacks, 4 to 23 frames deep, of 1 to 20
// samples each, drawn from a few hundred function names.
func bigProfile(tb testing.TB, n int) *profile.Profile {
	rng := rand.New(rand.NewPCG(7, 7))
	var lines []string
	for range n {
		depth := 4 + rng.IntN(20)
		frames := []string{fmt.Sprintf("comm:p%d", rng.IntN(4))}
		for d := 1; d < depth; d++ {
			frames = append(frames, fmt.Sprintf("fn_%d_%d", d, rng.IntN(3+d)))
		}
		lines = append(lines, strings.Join(frames, ";")+fmt.Sprintf(" %d", 1+rng.IntN(20)))
	}
	return folded(tb, lines...)
}

// BenchmarkSVG reports the time and size of a graph of 5 000 stacks;
// go test -run XXX -bench . ./internal/report/flame/
func BenchmarkSVG(b *testing.B) {
	p := bigProfile(b, 5000)
	var size countWriter
	for b.Loop() {
		size = 0
		if err := SVG(&size, p, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(size), "bytes/graph")
}

// BenchmarkDiffSVG is BenchmarkSVG for a differential graph.
func BenchmarkDiffSVG(b *testing.B) {
	base, other := bigProfile(b, 5000), bigProfile(b, 5000)
	var size countWriter
	for b.Loop() {
		size = 0
		if err := DiffSVG(&size, base, other, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(size), "bytes/graph")
}

type countWriter int

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }

var _ io.Writer = (*countWriter)(nil)
