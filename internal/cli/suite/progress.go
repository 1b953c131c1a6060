package suite

import (
	"bytes"
	"io"
	"os"
	"sync"
)

// progressWriter shows the suite's progress: on a terminal, measurement
// lines ("[n/N] …") overwrite each other in place; elsewhere (CI logs, files)
// every line is kept.
type progressWriter struct {
	mu      sync.Mutex
	w       io.Writer
	tty     bool
	inPlace bool // the last line written was an in-place one
}

func newProgressWriter(w io.Writer) *progressWriter {
	return &progressWriter{w: w, tty: isTerminal(w)}
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
		if bytes.HasPrefix(text, []byte("[")) {
			_, _ = p.w.Write(append([]byte("\r\033[K"), text...))
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
