// Package flame renders CPU profiles (github.com/google/pprof profiles, as
// internal/profile records them) as interactive, self-contained SVG
// flamegraphs, and two profiles of the same run as a differential
// flamegraph.
//
// The layout is an icicle: the root frame "all" is at the top and callees
// hang below their callers. Every graph carries its own small script (no
// external resources): hovering a frame shows "name — N samples (x.x %)",
// clicking zooms into it, "Reset zoom" undoes that and "Search" highlights
// the frames matching a regular expression and prints the share of samples
// they cover. Ids, styles and script state are scoped by Options.ID so that
// several graphs can live inline in one HTML page. The output is
// deterministic: the same profile and options give the same bytes.
package flame

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"
)

// Options configures a flamegraph.
type Options struct {
	// Title is the graph's heading; empty gives "Flamegraph" (or
	// "Differential flamegraph").
	Title string
	// Subtitle is an optional second line (e.g. the datapath and test).
	Subtitle string
	// Width is the graph's width in px; 0 means 1200.
	Width int
	// MinFraction: frames narrower than this fraction of all samples are
	// merged into one "…" frame under their parent, which is omitted when
	// it is itself narrower; 0 means 0.0005.
	MinFraction float64
	// ID prefixes every id and scopes the styles and script state, so that
	// several graphs can be inlined in one HTML page; letters, digits, '-'
	// and '_', starting with a letter. Empty means "flame".
	ID string
	// MaxDepth cuts frames deeper than this many levels below "all";
	// 0 means no limit.
	MaxDepth int
	// Inline leaves out the XML declaration, for embedding in HTML.
	Inline bool
	// BaseLabel and OtherLabel name the two profiles of DiffSVG (e.g. the
	// datapaths); empty means "base" and "other".
	BaseLabel, OtherLabel string
}

const (
	defaultWidth       = 1200
	minWidth           = 300
	defaultMinFraction = 0.0005
	defaultID          = "flame"
)

// ErrNoSamples is returned (wrapped) for a profile without any positive
// sample count.
var ErrNoSamples = errors.New("profile has no samples")

var idRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,63}$`)

// normalize fills in defaults and refuses bad options in one line naming the
// field.
func (o Options) normalize() (Options, error) {
	switch {
	case o.Width == 0:
		o.Width = defaultWidth
	case o.Width < minWidth:
		return o, fmt.Errorf("flame: Options.Width %d px is too narrow: use at least %d, or 0 for %d", o.Width, minWidth, defaultWidth)
	case o.Width > 100000:
		return o, fmt.Errorf("flame: Options.Width %d px is too wide: use at most 100000, or 0 for %d", o.Width, defaultWidth)
	}
	switch {
	case o.MinFraction == 0:
		o.MinFraction = defaultMinFraction
	case !(o.MinFraction > 0 && o.MinFraction < 1): // also refuses NaN
		return o, fmt.Errorf("flame: Options.MinFraction %v is out of range: use a fraction in (0, 1), e.g. 0.001, or 0 for %v", o.MinFraction, defaultMinFraction)
	}
	if o.MaxDepth < 0 {
		return o, fmt.Errorf("flame: Options.MaxDepth %d is negative: use a depth ≥ 1, or 0 for no limit", o.MaxDepth)
	}
	if o.ID == "" {
		o.ID = defaultID
	}
	if !idRE.MatchString(o.ID) {
		return o, fmt.Errorf("flame: Options.ID %q is not a usable id: use a letter followed by letters, digits, '-' or '_' (at most 64)", o.ID)
	}
	if o.BaseLabel == "" {
		o.BaseLabel = "base"
	}
	if o.OtherLabel == "" {
		o.OtherLabel = "other"
	}
	return o, nil
}

// Stack is one folded stack: frame names from the root (the outermost
// frame of the samples, e.g. "comm:cnibench"; not "all") to the leaf, and
// the number of samples with exactly this stack.
type Stack struct {
	Frames []string
	Count  int64
}

// String gives the stack in Brendan Gregg's folded format: "a;b;c 12".
func (s Stack) String() string {
	return strings.Join(s.Frames, ";") + " " + strconv.FormatInt(s.Count, 10)
}

// Fold returns p's samples as folded stacks, root to leaf, identical stacks
// merged, sorted by their frames (element by element; a stack before the
// stacks it is a prefix of). Sample value 0 is the count; samples with no
// positive count are left out. Inlined functions become frames of their
// own, callers first. A nil profile gives nil.
func Fold(p *profile.Profile) []Stack {
	root := build(p)
	var out []Stack
	var frames []string
	var walk func(n *node)
	walk = func(n *node) {
		if n.self > 0 && len(frames) > 0 {
			out = append(out, Stack{Frames: slices.Clone(frames), Count: n.self})
		}
		for _, c := range n.sorted {
			frames = append(frames, c.name)
			walk(c)
			frames = frames[:len(frames)-1]
		}
	}
	walk(root)
	// Samples without any location are counted on "all" itself: an
	// empty stack, first in the order.
	if root.self > 0 {
		out = append([]Stack{{Frames: []string{}, Count: root.self}}, out...)
	}
	return out
}

// hint is what a frame's location says of its code: kernel (the kernel's
// mapping "[kernel.kallsyms]", or a module's function file "[module]"),
// user space (any other mapping), or nothing (no mapping).
type hint uint8

const (
	hintNone hint = iota
	hintKernel
	hintUser
)

func hintOf(loc *profile.Location, f *profile.Function) hint {
	if f != nil && strings.HasPrefix(f.Filename, "[") && strings.HasSuffix(f.Filename, "]") {
		return hintKernel
	}
	if loc.Mapping == nil || loc.Mapping.File == "" {
		return hintNone
	}
	if strings.HasPrefix(loc.Mapping.File, "[kernel") {
		return hintKernel
	}
	return hintUser
}

// frameRef is one frame of a sample's stack.
type frameRef struct {
	name string
	hint hint
}

// stackOf returns the frames of sample s, root first.
func stackOf(s *profile.Sample, buf []frameRef) []frameRef {
	buf = buf[:0]
	for i := len(s.Location) - 1; i >= 0; i-- {
		loc := s.Location[i]
		if loc == nil {
			buf = append(buf, frameRef{name: "[unknown]"})
			continue
		}
		if len(loc.Line) == 0 {
			buf = append(buf, frameRef{unknownName(loc), hintOf(loc, nil)})
			continue
		}
		// Line[0] is the innermost inlined function: callers first.
		for j := len(loc.Line) - 1; j >= 0; j-- {
			f := loc.Line[j].Function
			name := ""
			if f != nil {
				name = f.Name
				if name == "" {
					name = f.SystemName
				}
			}
			if name == "" {
				name = unknownName(loc)
			}
			buf = append(buf, frameRef{name, hintOf(loc, f)})
		}
	}
	return buf
}

// unknownName names a location without a function, by its mapping's file
// as perf does ("[unknown] libc.so.6"); addresses would split the graph.
func unknownName(loc *profile.Location) string {
	if loc.Mapping != nil && loc.Mapping.File != "" {
		return "[unknown] " + path.Base(loc.Mapping.File)
	}
	return "[unknown]"
}
