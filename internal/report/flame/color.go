package flame

import (
	"fmt"
	"hash/fnv"
	"math"
	"regexp"
	"strings"
)

// family is the kind of code a frame is: by its name's prefix, then by
// its location's mapping, then guessed from its name.
type family int

const (
	famRoot    family = iota // "all"
	famProcess               // "comm:…"
	famKernel                // a C identifier: kernel functions
	famBPF                   // "bpf_prog:…"
	famUser                  // Go, C++ and other user-space symbols
	famUnknown               // "[unknown] …"
	famMerged                // "…": narrow frames merged
)

// kernelRE matches kernel symbols: C identifiers with the compiler's
// clone suffixes (".isra.0", ".constprop.0", ".part.0", ".cold") or perf's
// "_[k]" mark.
var kernelRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*((\.(isra|constprop|part|cold|llvm)(\.[0-9]+)?)*|_\[k\])$`)

func familyOf(n *node) family {
	switch name := n.name; {
	case n.merged > 0:
		return famMerged
	case name == "all":
		return famRoot
	case strings.HasPrefix(name, "comm:"):
		return famProcess
	case strings.HasPrefix(name, "bpf_prog:"), strings.HasPrefix(name, "bpf_prog_"):
		return famBPF
	case strings.HasPrefix(name, "[unknown]"):
		return famUnknown
	case n.hint == hintKernel:
		return famKernel
	case n.hint == hintUser:
		return famUser
	case kernelRE.MatchString(name):
		return famKernel
	default:
		return famUser
	}
}

// frameColor is a frame's fill: a family's hue range (kernel warm, BPF
// purple, user space aqua), the shade picked by a hash of the name, so the
// same function has the same colour in every graph.
func frameColor(n *node) string {
	h := fnv.New32a()
	h.Write([]byte(n.name))
	v := h.Sum32()
	a := float64(v&0xff) / 255       // 0..1
	b := float64((v>>8)&0xff) / 255  // 0..1
	c := float64((v>>16)&0xff) / 255 // 0..1
	switch familyOf(n) {
	case famRoot:
		return "rgb(200,200,200)"
	case famProcess:
		return rgb(180+20*a, 180+20*a, 170+20*a)
	case famMerged:
		return "rgb(215,215,215)"
	case famKernel: // red-orange-yellow, as flamegraph.pl's "hot"
		return rgb(205+50*a, 80+150*b, 40+40*c)
	case famBPF: // purple
		return rgb(150+50*a, 90+50*b, 200+50*c)
	case famUnknown: // cool grey
		return rgb(150+30*a, 170+30*a, 185+30*a)
	default: // user space and Go: aqua
		return rgb(60+60*a, 170+50*b, 170+50*b)
	}
}

func rgb(r, g, b float64) string {
	return fmt.Sprintf("rgb(%d,%d,%d)", clamp(r), clamp(g), clamp(b))
}

func clamp(v float64) int {
	return int(math.Round(math.Max(0, math.Min(255, v))))
}

// diffColor is the fill of a differential frame whose share changed by d
// (a fraction of all samples), scaled so that |d| = scale is full colour:
// red grew, blue shrank, pale grey unchanged.
func diffColor(d, scale float64) string {
	const grey = 235.0
	if scale <= 0 || d == 0 {
		return rgb(grey, grey, grey)
	}
	t := math.Min(1, math.Abs(d)/scale)
	// A change is never paler than a visible tint.
	t = 0.12 + 0.88*t
	if d > 0 {
		return rgb(grey+(220-grey)*t, grey+(40-grey)*t, grey+(40-grey)*t)
	}
	return rgb(grey+(40-grey)*t, grey+(90-grey)*t, grey+(220-grey)*t)
}
