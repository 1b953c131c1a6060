package report

import (
	"bufio"
	"fmt"
	"io"
)

// PageSection is one section of a report page: its anchor, its title and
// its body, already HTML.
type PageSection struct {
	ID, Title, Body string
}

// WritePage writes a self-contained report page: the report's style sheet
// (and extraCSS), a header with the title, the subtitle and a link to each
// section, the sections, and footer (HTML). Every report view uses it, so
// that they look alike.
func WritePage(w io.Writer, title, subtitle, extraCSS string, sections []PageSection, footer string) error {
	bw := bufio.NewWriter(w)
	p := func(format string, a ...any) { fmt.Fprintf(bw, format, a...) }
	p("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	p("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	p("<meta name=\"generator\" content=\"cnibench\">\n")
	p("<title>%s</title>\n<style>\n%s%s%s</style>\n</head>\n<body>\n", esc(title), css, gradeCSS(), extraCSS)
	p("<header>\n<h1>%s</h1>\n<p class=\"sub\">%s</p>\n<nav>", esc(title), esc(subtitle))
	for i, s := range sections {
		if i > 0 {
			p(" · ")
		}
		p("<a href=\"#%s\">%s</a>", esc(s.ID), esc(s.Title))
	}
	p("</nav>\n</header>\n<main>\n")
	for _, s := range sections {
		p("<section id=\"%s\">\n<h2>%s</h2>\n%s</section>\n", esc(s.ID), esc(s.Title), s.Body)
	}
	p("</main>\n<footer>%s</footer>\n</body>\n</html>\n", footer)
	return bw.Flush()
}
