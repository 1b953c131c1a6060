package suitecmd

import (
	"bytes"
	"io"
	"os"
	"regexp"
	"sync"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/cnibench/cnibench/internal/report"
)

// skipLine matches the suite's notice of a skipped datapath.
var skipLine = regexp.MustCompile(`^[A-Za-z0-9_.-]+: skipped: `)

// progressWriter shows the suite's progress: on a terminal, measurement
// lines ("[n/N] …") and skip notices ("netkit: skipped: …") overwrite each
// other in place, since the table at the end lists every skip once;
// elsewhere (CI logs, files) every line is kept.
type progressWriter struct {
	mu      sync.Mutex
	w       io.Writer
	tty     bool
	width   int  // terminal columns; in-place lines are cut to fit (0: 100)
	inPlace bool // the last line written was an in-place one
}

func newProgressWriter(w io.Writer) *progressWriter {
	p := &progressWriter{w: w, tty: isTerminal(w)}
	if f, ok := w.(*os.File); ok && p.tty {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			p.width = cols
		}
	}
	return p
}

// fit cuts an in-place line to the terminal's width: a longer line would
// wrap, and "\r" would then overwrite only its last part.
func (p *progressWriter) fit(line []byte) []byte {
	width := p.width
	if width <= 0 {
		width = report.TerminalWidth
	}
	if utf8.RuneCount(line) < width {
		return line
	}
	r := []rune(string(line))
	return []byte(string(r[:width-2]) + "…")
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb"
}

func (p *progressWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.tty {
		return p.w.Write(b)
	}
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		text := bytes.TrimRight(line, "\n")
		if bytes.HasPrefix(text, []byte("[")) || skipLine.Match(text) {
			_, _ = p.w.Write(append([]byte("\r\033[K"), p.fit(text)...))
			p.inPlace = true
			continue
		}
		if p.inPlace {
			_, _ = p.w.Write([]byte("\n"))
			p.inPlace = false
		}
		_, _ = p.w.Write(line)
	}
	return len(b), nil
}

// Done ends an in-place line.
func (p *progressWriter) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inPlace {
		_, _ = p.w.Write([]byte("\n"))
		p.inPlace = false
	}
}
