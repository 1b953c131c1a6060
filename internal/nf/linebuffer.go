// Package nf holds what the lab's netfilter users share: the text of bulk
// loads (iptables-restore tables, ipset restore scripts) built line by
// line, and the parsers of what iptables and ipset list back.
package nf

import "bytes"

// LineBuffer accumulates the text of a bulk load (an iptables-restore table,
// an ipset restore script) line by line, like kube-proxy's
// proxyutil.LineBuffer: words are joined by single spaces and every line
// ends in a newline. It counts the lines it holds.
type LineBuffer struct {
	buf   bytes.Buffer
	lines int
}

// Write appends one line made of words.
func (b *LineBuffer) Write(words ...string) {
	for i, w := range words {
		if i > 0 {
			b.buf.WriteByte(' ')
		}
		b.buf.WriteString(w)
	}
	b.buf.WriteByte('\n')
	b.lines++
}

// Grow reserves room for about n more bytes.
func (b *LineBuffer) Grow(n int) { b.buf.Grow(n) }

// Bytes returns the text written so far.
func (b *LineBuffer) Bytes() []byte { return b.buf.Bytes() }

// Lines returns the number of lines written so far.
func (b *LineBuffer) Lines() int { return b.lines }
