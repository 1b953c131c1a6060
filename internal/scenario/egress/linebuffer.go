package egress

import "bytes"

// lineBuffer accumulates the text of a bulk load (an iptables-restore table,
// an ipset restore script) line by line, like kube-proxy's
// proxyutil.LineBuffer: words are joined by single spaces and every line
// ends in a newline. It counts the lines it holds.
type lineBuffer struct {
	buf   bytes.Buffer
	lines int
}

// Write appends one line made of words.
func (b *lineBuffer) Write(words ...string) {
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
func (b *lineBuffer) Grow(n int) { b.buf.Grow(n) }

// Bytes returns the text written so far.
func (b *lineBuffer) Bytes() []byte { return b.buf.Bytes() }

// Lines returns the number of lines written so far.
func (b *lineBuffer) Lines() int { return b.lines }
