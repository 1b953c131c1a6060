package flame

import (
	"cmp"
	"math"
	"slices"

	"github.com/google/pprof/profile"
)

// node is one frame of the call tree: a name at a path from the root.
type node struct {
	name        string
	hint        hint // the largest of the locations' hints: order-independent
	total, self int64
	children    map[string]*node
	sorted      []*node // children by name, set by finish
	// merged is the number of narrow frames a "…" frame stands for;
	// parts are those frames (for the differential colour).
	merged int
	parts  []*node
}

func (n *node) child(name string) *node {
	if c, ok := n.children[name]; ok {
		return c
	}
	if n.children == nil {
		n.children = map[string]*node{}
	}
	c := &node{name: name}
	n.children[name] = c
	return c
}

// finish sorts every node's children by name, recursively.
func (n *node) finish() {
	n.sorted = n.sorted[:0]
	for _, c := range n.children {
		n.sorted = append(n.sorted, c)
	}
	slices.SortFunc(n.sorted, func(a, b *node) int { return cmp.Compare(a.name, b.name) })
	for _, c := range n.sorted {
		c.finish()
	}
}

// build returns the call tree of p under a root named "all". A sample whose
// count would overflow the total is left out.
func build(p *profile.Profile) *node {
	root := &node{name: "all"}
	if p == nil {
		return root
	}
	var buf []frameRef
	for _, s := range p.Sample {
		if s == nil || len(s.Value) == 0 || s.Value[0] <= 0 {
			continue
		}
		v := s.Value[0]
		if root.total > math.MaxInt64-v {
			continue
		}
		buf = stackOf(s, buf)
		n := root
		n.total += v
		for _, f := range buf {
			n = n.child(f.name)
			n.hint = max(n.hint, f.hint)
			n.total += v
		}
		n.self += v
	}
	root.finish()
	return root
}

// lookup returns the node at path (names below the root), or nil.
func (n *node) lookup(path []string) *node {
	for _, name := range path {
		if n == nil {
			return nil
		}
		n = n.children[name]
	}
	return n
}

// frame is one laid-out frame of the graph.
type frame struct {
	n     *node
	path  []string // names below the root, for the differential lookup
	start int64    // samples before this frame in its row
	depth int      // 0 is "all"
}

// layout flattens the tree in pre-order (parents before children, children
// by name), merging children narrower than minFrac of all samples into one
// "…" frame, leaving that out when it is narrower still, and cutting frames
// deeper than maxDepth (0: no limit). It returns the frames and the depth of
// the deepest.
func layout(root *node, minFrac float64, maxDepth int) ([]frame, int) {
	threshold := minFrac * float64(root.total)
	var out []frame
	deepest := 0
	var walk func(n *node, path []string, start int64, depth int)
	walk = func(n *node, path []string, start int64, depth int) {
		out = append(out, frame{n: n, path: path, start: start, depth: depth})
		deepest = max(deepest, depth)
		if maxDepth > 0 && depth >= maxDepth {
			return
		}
		at := start
		var narrow []*node
		var narrowTotal int64
		for _, c := range n.sorted {
			if float64(c.total) < threshold {
				narrow = append(narrow, c)
				narrowTotal += c.total
				continue
			}
			walk(c, append(slices.Clip(path), c.name), at, depth+1)
			at += c.total
		}
		if len(narrow) > 0 && float64(narrowTotal) >= threshold {
			m := &node{name: "…", total: narrowTotal, merged: len(narrow), parts: narrow}
			out = append(out, frame{n: m, path: append(slices.Clip(path), "…"), start: at, depth: depth + 1})
			deepest = max(deepest, depth+1)
		}
	}
	walk(root, nil, 0, 0)
	return out, deepest
}
