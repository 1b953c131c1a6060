package findings

import (
	"math"
	"regexp"
	"strconv"
	"strings"
)

// figure is a quoted figure: its value, the precision it was written at
// (half a unit of its last digit, in the value's scale), its kind and,
// for a percentage, the sign it was written with.
type figure struct {
	text  string
	kind  byte // '%', 'p', 'q' or 'u' (a value with a unit or multiplier)
	op    string
	value float64
	tol   float64
	// sign is '+' or '-' when the figure was written with one (a
	// percentage's +19.7 % or −24.6 %), else 0.
	sign byte
}

const num = `(\d{1,3}(?:[  ]\d{3})+|\d*\.\d+|\d+)`

var (
	pctRe = regexp.MustCompile(`([+−-]?)` + num + `(?:\s?[–-]\s?([+−-]?)` + num + `)?\s?%`)
	pRe   = regexp.MustCompile(`\b([pq])\s?(=|<|>|≤|≥)\s?` + num)
	// bareRe finds numbers with no unit in a check's output.
	bareRe = regexp.MustCompile(`(?:^|[\s(\[=/])` + num + `(?:$|[\s),\]])`)
	unitRe = regexp.MustCompile(num + `(?:\s?[–-]\s?` + num + `)?\s?(Gbit/s|Mbit/s|kbit/s|µs|ms|MiB|mCPU|k|M|G)(?:\b|/|\s|$)`)
)

// figures finds the checked figures of a text.
func figures(text string) []figure {
	var out []figure
	for _, m := range pctRe.FindAllStringSubmatch(text, -1) {
		for _, sv := range [][2]string{{m[1], m[2]}, {m[3], m[4]}} {
			if sv[1] != "" {
				f := mkFigure(m[0], '%', "=", sv[1], 1)
				switch sv[0] {
				case "+":
					f.sign = '+'
				case "-", "−":
					f.sign, f.value = '-', -f.value
				}
				out = append(out, f)
			}
		}
	}
	for _, m := range pRe.FindAllStringSubmatch(text, -1) {
		out = append(out, mkFigure(m[0], m[1][0], m[2], m[3], 1))
	}
	for _, m := range unitRe.FindAllStringSubmatch(text, -1) {
		for _, v := range []string{m[1], m[2]} {
			if v != "" {
				out = append(out, mkFigure(m[0], 'u', "=", v, scale(m[3])))
			}
		}
	}
	return out
}

func mkFigure(text string, kind byte, op, v string, sc float64) figure {
	v = strings.NewReplacer(" ", "", " ", "").Replace(v)
	f, _ := strconv.ParseFloat(v, 64)
	dec := 0
	if _, frac, ok := strings.Cut(v, "."); ok {
		dec = len(frac)
	}
	return figure{text: strings.TrimSpace(text), kind: kind, op: op, value: f * sc, tol: 0.5 * math.Pow(10, -float64(dec)) * sc * (1 + 1e-9)}
}

func scale(unit string) float64 {
	switch unit {
	case "k":
		return 1e3
	case "M", "Mbit/s":
		return 1e6
	case "G", "Gbit/s":
		return 1e9
	case "kbit/s":
		return 1e3
	}
	return 1
}

// pool holds the numbers printed by the lines an at: comment selects, by
// kind.
type pool struct {
	pct     []figure // signed, with the sign they were printed with
	p, q    []float64
	unit    []float64
	entries int
}

func (p *pool) addLine(line string) {
	for _, f := range figures(line) {
		switch f.kind {
		case '%':
			p.pct = append(p.pct, f)
		case 'p':
			p.p = append(p.p, f.value)
		case 'q':
			p.q = append(p.q, f.value)
		case 'u':
			p.unit = append(p.unit, f.value)
		}
	}
	// Bare numbers (counts, rates without a unit) count as values too.
	for _, m := range bareRe.FindAllStringSubmatch(line, -1) {
		p.unit = append(p.unit, mkFigure(m[1], 'u', "=", m[1], 1).value)
	}
	p.entries++
}

// has tells whether f is among the pool's numbers at f's precision; a
// percentage written with a sign must have been printed with the same.
func (p *pool) has(f figure) bool {
	if f.kind == '%' {
		for _, v := range p.pct {
			if f.sign != 0 && v.sign != f.sign {
				continue
			}
			if math.Abs(math.Abs(v.value)-math.Abs(f.value)) <= f.tol {
				return true
			}
		}
		return false
	}
	vals := p.unit
	switch f.kind {
	case 'p':
		vals = p.p
	case 'q':
		vals = p.q
	}
	for _, v := range vals {
		switch f.op {
		case "<", "≤":
			if v <= f.value+f.tol {
				return true
			}
		case ">", "≥":
			if v >= f.value-f.tol && v <= f.value+f.tol {
				return true
			}
		default:
			if math.Abs(v-f.value) <= f.tol {
				return true
			}
		}
	}
	return false
}

// normalize makes a figure comparable with a "not data" entry: no spaces,
// no sign.
func normalize(s string) string {
	s = strings.NewReplacer(" ", "", " ", "", "−", "-", "\u202f", "").Replace(strings.TrimSpace(s))
	return strings.TrimLeft(s, "+-")
}

// globalNotData are figures that state a rule, not a measurement: the
// significance threshold, of p or q.
func globalNotData(f figure) bool {
	return (f.kind == 'p' || f.kind == 'q') && f.value == 0.05
}

// checked are the figures of text a section must find in its outputs:
// those not listed as not data.
func checked(text string, notData map[string]bool) []figure {
	var figs []figure
	for _, f := range figures(text) {
		if !notData[normalize(f.text)] && !globalNotData(f) {
			figs = append(figs, f)
		}
	}
	return figs
}
