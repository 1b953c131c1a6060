package report

import (
	"fmt"
	"strings"
)

// gradeStyle is how a grade looks in each format. The colours run in
// order, from green (Very good) through yellow-green and orange to red
// (Poor), so a reader can rank cells by colour alone.
type gradeStyle struct {
	Key  string // class suffix: g-KEY
	BG   string // HTML background
	FG   string // HTML text colour
	ANSI string // terminal colour
	Mark string // Markdown mark (Markdown has no cell colours)
}

var gradeStyles = map[Grade]gradeStyle{
	VeryGood: {"verygood", "#3fa34d", "#fff", "\x1b[1;32m", "🟢"},
	Good:     {"good", "#b8d94a", "#1b1b1b", "\x1b[38;5;148m", "🟡"},
	Fair:     {"fair", "#f4a340", "#1b1b1b", "\x1b[38;5;208m", "🟠"},
	Poor:     {"poor", "#d9473b", "#fff", "\x1b[1;31m", "🔴"},
}

// gradeOrder lists the grades best first.
var gradeOrder = []Grade{VeryGood, Good, Fair, Poor}

// parseGradeClass splits "g-good" or the span class "g-good-verygood"
// (worse grade first) into grades; ok is false for other classes.
func parseGradeClass(class string) (worst, best Grade, ok bool) {
	rest, found := strings.CutPrefix(class, "g-")
	if !found {
		return NoGrade, NoGrade, false
	}
	byKey := func(k string) (Grade, bool) {
		for _, g := range gradeOrder {
			if gradeStyles[g].Key == k {
				return g, true
			}
		}
		return NoGrade, false
	}
	if g, ok := byKey(rest); ok {
		return g, g, true
	}
	a, b, cut := strings.Cut(rest, "-")
	if !cut {
		return NoGrade, NoGrade, false
	}
	w, ok1 := byKey(a)
	bg, ok2 := byKey(b)
	return w, bg, ok1 && ok2
}

// gradeCSS styles every grade class and every span of two grades (a
// gradient from the worse to the better grade's colour).
func gradeCSS() string {
	var b strings.Builder
	for _, g := range gradeOrder {
		st := gradeStyles[g]
		fmt.Fprintf(&b, ".g-%s { background: %s; color: %s; }\n", st.Key, st.BG, st.FG)
	}
	for i, best := range gradeOrder {
		for _, worst := range gradeOrder[i+1:] {
			sb, sw := gradeStyles[best], gradeStyles[worst]
			fmt.Fprintf(&b, ".g-%s-%s { background: linear-gradient(90deg, %s, %s); color: #1b1b1b; }\n", sw.Key, sb.Key, sw.BG, sb.BG)
		}
	}
	b.WriteString(".g-none { color: #777; }\n")
	return b.String()
}

// gradeANSI is the terminal colour of a grade class (a span takes the
// worse grade's colour); "" for other classes.
func gradeANSI(class string) string {
	if class == "g-none" {
		return "\x1b[2m"
	}
	w, _, ok := parseGradeClass(class)
	if !ok {
		return ""
	}
	return gradeStyles[w].ANSI
}

// gradeMark is the Markdown mark of a grade class: one coloured circle,
// or two for a span ("🟡🟢 ").
func gradeMark(class string) string {
	w, b, ok := parseGradeClass(class)
	if !ok {
		return ""
	}
	if w == b {
		return gradeStyles[w].Mark + " "
	}
	return gradeStyles[w].Mark + gradeStyles[b].Mark + " "
}
