package report

import (
	"fmt"
	"io"
	"strings"
)

// TerminalWidth is the width terminal output is laid out for: tables never
// exceed it, paragraphs wrap at it.
const TerminalWidth = 100

// maxInline is the longest text a left-aligned cell keeps inline when its
// table is too wide; longer text becomes a numbered footnote under the table.
const maxInline = 28

// TextTable is a plain table for terminal output (used by the suite's
// end-of-run table): Keys leading columns identify a row and are repeated
// when the table has to be split to fit the width.
type TextTable struct {
	Caption string
	Header  []string
	Right   []bool
	Rows    [][]string
	Keys    int
	// Classes optionally colour cells (same shape as Rows; "" = none).
	Classes [][]string
}

// WriteText writes t laid out to fit width columns: long left-aligned
// text moves into footnotes, and a table still too wide is split into
// several tables that repeat the key columns.
func (t TextTable) WriteText(w io.Writer, width int, color bool) error {
	tb := &table{Caption: t.Caption, Header: t.Header, Right: t.Right, Keys: t.Keys}
	for i, r := range t.Rows {
		row := make([]cell, len(r))
		for j, s := range r {
			row[j] = cell{Text: s}
			if i < len(t.Classes) && j < len(t.Classes[i]) {
				row[j].Class = t.Classes[i][j]
			}
		}
		tb.Rows = append(tb.Rows, row)
	}
	textTable(w, tb, colorer(color), width)
	return nil
}

// colorer returns the function that wraps text in the ANSI colour of a
// class (identity without colour).
func colorer(color bool) func(class, s string) string {
	return func(class, s string) string {
		a := ansiFor(class)
		if !color || a == "" {
			return s
		}
		return a + s + ansiReset
	}
}

// footnotes collects the long texts moved out of a table, numbered in
// order of first use; equal texts share a number.
type footnotes struct {
	texts []string
	index map[string]int
}

func (f *footnotes) ref(s string) string {
	if f.index == nil {
		f.index = map[string]int{}
	}
	n, ok := f.index[s]
	if !ok {
		f.texts = append(f.texts, s)
		n = len(f.texts)
		f.index[s] = n
	}
	return fmt.Sprintf("[%d]", n)
}

// shorten replaces a long cell text by a footnote reference, keeping a
// short lead-in ("skipped [1]" for "skipped: kernel … has no netkit").
func (f *footnotes) shorten(s string) string {
	if head, rest, ok := strings.Cut(s, ": "); ok && runeLen(head) <= maxInline-5 && rest != "" {
		return head + " " + f.ref(rest)
	}
	return f.ref(s)
}

func (f *footnotes) write(w io.Writer, width int) {
	for i, s := range f.texts {
		mark := fmt.Sprintf("[%d] ", i+1)
		fmt.Fprintln(w, hanging(mark+s, width, runeLen(mark)))
	}
}

// colWidths are the widths of t's columns (header and cells).
func colWidths(t *table) []int {
	width := make([]int, len(t.Header))
	for i, h := range t.Header {
		width[i] = runeLen(h)
	}
	for _, r := range t.Rows {
		for i, c := range r {
			if i < len(width) {
				width[i] = max(width[i], runeLen(c.Text))
			}
		}
	}
	return width
}

func totalWidth(ws []int) int {
	n := 0
	for i, w := range ws {
		if i > 0 {
			n += 2
		}
		n += w
	}
	return n
}

// textTable writes t for a terminal within width columns.
func textTable(w io.Writer, t *table, col func(class, s string) string, width int) {
	if t.Records && totalWidth(colWidths(t)) > width {
		textRecords(w, t, width)
		return
	}
	keys := max(1, t.Keys)
	if keys > len(t.Header) {
		keys = len(t.Header)
	}
	var notes footnotes
	if totalWidth(colWidths(t)) > width {
		// Move long left-aligned text (not the key columns) to footnotes.
		c := *t
		c.Rows = make([][]cell, len(t.Rows))
		for i, r := range t.Rows {
			c.Rows[i] = append([]cell(nil), r...)
			for j := keys; j < len(r); j++ {
				if (j >= len(t.Right) || !t.Right[j]) && runeLen(r[j].Text) > maxInline {
					c.Rows[i][j].Text = notes.shorten(r[j].Text)
				}
			}
		}
		t = &c
	}
	ws := colWidths(t)
	// Split the non-key columns into chunks that fit beside the keys.
	var chunks [][]int
	avail := width - totalWidth(ws[:keys])
	var cur []int
	used := 0
	for j := keys; j < len(ws); j++ {
		need := ws[j] + 2
		if len(cur) > 0 && used+need > avail {
			chunks = append(chunks, cur)
			cur, used = nil, 0
		}
		cur = append(cur, j)
		used += need
	}
	if len(cur) > 0 || len(chunks) == 0 {
		chunks = append(chunks, cur)
	}
	for ci, chunk := range chunks {
		idx := make([]int, 0, keys+len(chunk))
		for j := 0; j < keys; j++ {
			idx = append(idx, j)
		}
		idx = append(idx, chunk...)
		caption := t.Caption
		if len(chunks) > 1 {
			part := fmt.Sprintf("(part %d of %d)", ci+1, len(chunks))
			caption = strings.TrimSpace(caption + " " + part)
		}
		if caption != "" {
			fmt.Fprintln(w, wrap(caption, width))
		}
		writeColumns(w, t, idx, ws, col)
		if ci < len(chunks)-1 {
			fmt.Fprintln(w)
		}
	}
	notes.write(w, width)
	fmt.Fprintln(w)
}

// writeColumns writes the columns idx of t.
func writeColumns(w io.Writer, t *table, idx, ws []int, col func(class, s string) string) {
	pad := func(s string, i int, last bool) string {
		n := ws[i] - runeLen(s)
		if i < len(t.Right) && t.Right[i] {
			return strings.Repeat(" ", n) + s
		}
		if last {
			return s
		}
		return s + strings.Repeat(" ", n)
	}
	var hs, rule []string
	for k, i := range idx {
		hs = append(hs, pad(t.Header[i], i, k == len(idx)-1))
		rule = append(rule, strings.Repeat("-", ws[i]))
	}
	fmt.Fprintln(w, strings.TrimRight(strings.Join(hs, "  "), " "))
	fmt.Fprintln(w, strings.Join(rule, "  "))
	for _, r := range t.Rows {
		var cs []string
		for k, i := range idx {
			var c cell
			if i < len(r) {
				c = r[i]
			}
			cs = append(cs, col(c.Class, pad(c.Text, i, k == len(idx)-1)))
		}
		fmt.Fprintln(w, strings.TrimRight(strings.Join(cs, "  "), " "))
	}
}

// textRecords writes a table of long texts as one record per row: the
// first cell as a heading, the others indented as "Header: text".
func textRecords(w io.Writer, t *table, width int) {
	if t.Caption != "" {
		fmt.Fprintln(w, wrap(t.Caption, width))
	}
	for _, r := range t.Rows {
		if len(r) == 0 {
			continue
		}
		fmt.Fprintln(w, r[0].Text)
		for i := 1; i < len(r) && i < len(t.Header); i++ {
			if r[i].Text == "" || r[i].Text == "—" {
				continue
			}
			fmt.Fprintln(w, "  "+hanging(t.Header[i]+": "+r[i].Text, width-2, 2))
		}
	}
	fmt.Fprintln(w)
}

// hanging wraps s at width runes, indenting continuation lines by indent
// spaces (they stay within width too).
func hanging(s string, width, indent int) string {
	lines := strings.Split(wrap(s, width-indent), "\n")
	return strings.Join(lines, "\n"+strings.Repeat(" ", indent))
}

// Wrap wraps s at width runes for a terminal, indenting continuation
// lines by indent spaces.
func Wrap(s string, width, indent int) string { return hanging(s, width, indent) }
