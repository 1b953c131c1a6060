package findings

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
)

// Figures tied to their lines. A block of findings.md — a paragraph, a
// list item, a table row (a line starting with |) or a heading — that
// quotes figures carries one comment
//
//	<!-- at: SRC; SRC; … -->
//
// SRC is OUT /REGEXP/: OUT a check output of the page, by its path
// relative to docs/ or by its base name when no other check output has
// it; REGEXP (Go syntax) selects the lines of OUT whose numbers the block
// may quote. A SRC without a REGEXP fails: a figure is tied to its lines,
// never to a whole output. Every figure of the block must be
// among the numbers of the selected lines of its SRCs, at the precision
// quoted, a percentage written with a sign with the sign printed.

var atRe = regexp.MustCompile(`(?s)<!--\s*at:\s*(.*?)\s*-->`)

// block is one paragraph, list item, table row or heading of a section:
// its text as written (comments included) and its first line's number
// in the section.
type block struct {
	raw  string
	line int
}

// name is the block's first words, for messages.
func (b block) name() string {
	t := strings.Join(strings.Fields(fenceRe.ReplaceAllString(commentRe.ReplaceAllString(b.raw, " "), " ")), " ")
	t = strings.TrimLeft(t, "|-*# ")
	if r := []rune(t); len(r) > 60 {
		t = string(r[:60]) + "…"
	}
	return t
}

var (
	listItemRe = regexp.MustCompile(`^\s*(?:[-*+]|\d+\.)\s`)
	headingRe  = regexp.MustCompile(`^#{1,6}\s`)
)

// blocks splits a section's text into blocks. Fenced code is no block;
// an HTML comment spanning lines stays in the block it starts in.
func blocks(text string) []block {
	var out []block
	var cur []string
	start := 0
	flush := func() {
		if len(cur) > 0 {
			out = append(out, block{raw: strings.Join(cur, "\n"), line: start})
		}
		cur = nil
	}
	lines := strings.Split(text, "\n")
	inFence, inComment := false, false
	for i, l := range lines {
		trim := strings.TrimSpace(l)
		switch {
		case inComment:
			cur = append(cur, l)
			inComment = !strings.Contains(l, "-->")
			continue
		case strings.HasPrefix(trim, "```"):
			flush()
			inFence = !inFence
			continue
		case inFence:
			continue
		case trim == "":
			flush()
			continue
		case strings.HasPrefix(trim, "|"), headingRe.MatchString(l):
			flush()
			out = append(out, block{raw: l, line: i + 1})
			continue
		case listItemRe.MatchString(l), len(cur) > 0 && (strings.HasPrefix(cur[0], "|") || headingRe.MatchString(cur[0])):
			flush()
		}
		if len(cur) == 0 {
			start = i + 1
		}
		cur = append(cur, l)
		if o, c := strings.LastIndex(l, "<!--"), strings.LastIndex(l, "-->"); o >= 0 && c < o {
			inComment = true
		}
	}
	flush()
	return out
}

// source is one SRC of an at: comment.
type source struct {
	out string         // the output's path relative to docs/
	re  *regexp.Regexp // nil: every line
	src string         // as written
}

func (s source) String() string { return s.src }

// parseAt splits an at: comment's text into its SRCs, resolving each
// OUT among outs (paths relative to docs/).
func parseAt(spec string, outs []string) ([]source, error) {
	var srcs []source
	rest := strings.TrimSpace(spec)
	for rest != "" {
		// OUT runs to a space or a ;, a path's slashes included; a
		// REGEXP starts after a space.
		name := rest
		if i := strings.IndexAny(rest, " ;"); i >= 0 {
			name = rest[:i]
		}
		rest = strings.TrimSpace(rest[len(name):])
		s := source{src: name}
		if strings.HasPrefix(rest, "/") {
			end := regexEnd(rest)
			if end < 0 {
				return nil, fmt.Errorf("at: %q: /REGEXP/ not closed by a / before ; or the end", spec)
			}
			expr := rest[1:end]
			re, err := regexp.Compile(expr)
			if err != nil {
				return nil, fmt.Errorf("at: %s /%s/: %w", name, expr, err)
			}
			s.re, s.src = re, name+" /"+expr+"/"
			rest = strings.TrimSpace(rest[end+1:])
		}
		out, err := resolve(name, outs)
		if err != nil {
			return nil, err
		}
		s.out = out
		srcs = append(srcs, s)
		switch {
		case rest == "":
		case strings.HasPrefix(rest, ";"):
			rest = strings.TrimSpace(rest[1:])
		default:
			return nil, fmt.Errorf("at: %q: expected ; before %q", spec, rest)
		}
	}
	if len(srcs) == 0 {
		return nil, fmt.Errorf("at: names no output")
	}
	return srcs, nil
}

// regexEnd finds the / closing the REGEXP that s starts with: the last /
// before the next "; " separator or the end (a / inside the expression,
// as in trans/s, needs no escape).
func regexEnd(s string) int {
	for i := 1; i < len(s); i++ {
		if s[i] != '/' || s[i-1] == '\\' {
			continue
		}
		if after := strings.TrimSpace(s[i+1:]); after == "" || strings.HasPrefix(after, ";") {
			return i
		}
	}
	return -1
}

// resolve finds OUT among the page's check outputs: a path relative to
// docs/, or a base name no other output has.
func resolve(name string, outs []string) (string, error) {
	if strings.Contains(name, "/") {
		for _, o := range outs {
			if o == name {
				return o, nil
			}
		}
		return "", fmt.Errorf("at: %s is not a check output of the page", name)
	}
	var found []string
	for _, o := range outs {
		if path.Base(o) == name {
			found = append(found, o)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("at: no check output of the page is named %s", name)
	case 1:
		return found[0], nil
	}
	sort.Strings(found)
	return "", fmt.Errorf("at: %s is ambiguous: %s; write the path", name, strings.Join(found, ", "))
}

// checkBlock checks one block's figures against its at: sources. outputs
// maps every check output of the page (path relative to docs/) to its
// text. It returns the problems found, each naming the block.
func checkBlock(b block, notData map[string]bool, outputs map[string]string) []string {
	figs := checked(prose(b.raw), notData)
	if len(figs) == 0 {
		return nil
	}
	ats := atRe.FindAllStringSubmatch(b.raw, -1)
	if len(ats) == 0 {
		return []string{fmt.Sprintf("block %q (line %d) quotes %s but has no <!-- at: OUT /LINES/; … --> naming where", b.name(), b.line, figList(figs))}
	}
	outs := make([]string, 0, len(outputs))
	for o := range outputs {
		outs = append(outs, o)
	}
	var srcs []source
	for _, m := range ats {
		s, err := parseAt(m[1], outs)
		if err != nil {
			return []string{fmt.Sprintf("block %q (line %d): %v", b.name(), b.line, err)}
		}
		for _, src := range s {
			if src.re == nil {
				return []string{fmt.Sprintf("block %q (line %d): at: %s names no /REGEXP/ selecting the lines its figures come from", b.name(), b.line, src)}
			}
		}
		srcs = append(srcs, s...)
	}
	var p pool
	var names []string
	for _, s := range srcs {
		names = append(names, s.String())
		n := p.entries
		for _, line := range strings.Split(outputs[s.out], "\n") {
			if s.re.MatchString(line) {
				p.addLine(line)
			}
		}
		if p.entries == n {
			return []string{fmt.Sprintf("block %q (line %d): %s selects no line of %s", b.name(), b.line, s, s.out)}
		}
	}
	var errs []string
	for _, f := range figs {
		if !p.has(f) {
			errs = append(errs, fmt.Sprintf("block %q (line %d): %q is not among the numbers of %s", b.name(), b.line, f.text, strings.Join(names, "; ")))
		}
	}
	return errs
}

// prose is a text without its comments, fenced code and link targets:
// what a reader reads.
func prose(s string) string {
	s = commentRe.ReplaceAllString(s, " ")
	s = fenceRe.ReplaceAllString(s, " ")
	return linkRe.ReplaceAllString(s, "]")
}

func figList(figs []figure) string {
	var ts []string
	for i, f := range figs {
		if i == 3 {
			ts = append(ts, "…")
			break
		}
		ts = append(ts, f.text)
	}
	return strings.Join(ts, ", ")
}
