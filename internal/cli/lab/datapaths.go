package labcmd

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/internal/cli/streams"
	"github.com/cnibench/cnibench/internal/lab"
)

// tableWidth is the width terminal tables fit in.
const tableWidth = 100

func newDatapaths(_ *slog.Logger, s streams.IOStreams, p privileges) *cobra.Command {
	return &cobra.Command{
		Use:   "datapaths",
		Short: "List the datapaths and whether this machine can run them",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			// Every probe builds a scratch namespace: without root each
			// would say "no" for a reason that is not the datapath's.
			if err := p.check("datapaths"); err != nil {
				return err
			}
			var rows []datapathRow
			for _, name := range lab.Names() {
				dp, err := lab.NewDatapath(name)
				if err != nil {
					return err
				}
				r := datapathRow{name: name, description: dp.Description()}
				if err := dp.Probe(); err != nil {
					r.reason = err.Error()
				}
				rows = append(rows, r)
			}
			return writeDatapaths(s.Out, rows, tableWidth)
		},
	}
}

// datapathRow is one datapath: reason is why it cannot run here ("" if it can).
type datapathRow struct {
	name, description, reason string
}

// writeDatapaths writes the datapaths as a table that fits width columns:
// descriptions wrap inside their column and why a datapath cannot run here
// becomes a numbered footnote under the table.
func writeDatapaths(w io.Writer, rows []datapathRow, width int) error {
	nameW := len("DATAPATH")
	for _, r := range rows {
		nameW = max(nameW, len(r.name))
	}
	var notes []string
	here := make([]string, len(rows))
	hereW := len("HERE")
	for i, r := range rows {
		here[i] = "yes"
		if r.reason != "" {
			notes = append(notes, fmt.Sprintf("[%d] %s: %s", len(notes)+1, r.name, r.reason))
			here[i] = fmt.Sprintf("no [%d]", len(notes))
		}
		hereW = max(hereW, len(here[i]))
	}
	const gap = 2
	descW := max(width-nameW-hereW-2*gap, 20)
	var b strings.Builder
	line := func(name, here, desc string) {
		fmt.Fprintf(&b, "%-*s%*s%-*s%*s%s", nameW, name, gap, "", hereW, here, gap, "", desc)
		b.WriteString("\n")
	}
	line("DATAPATH", "HERE", "DESCRIPTION")
	for i, r := range rows {
		for j, l := range wrap(r.description, descW) {
			if j == 0 {
				line(r.name, here[i], l)
			} else {
				line("", "", l)
			}
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n")
		for _, n := range notes {
			for j, l := range wrap(n, width-4) {
				if j > 0 {
					b.WriteString("    ")
				}
				b.WriteString(l)
				b.WriteString("\n")
			}
		}
	}
	out := strings.ReplaceAll(b.String(), " \n", "\n")
	for strings.Contains(out, " \n") {
		out = strings.ReplaceAll(out, " \n", "\n")
	}
	_, err := io.WriteString(w, out)
	return err
}

// wrap breaks s into lines of at most width runes at spaces (a longer word
// gets a line of its own).
func wrap(s string, width int) []string {
	var lines []string
	var cur []rune
	for _, word := range strings.Fields(s) {
		wr := []rune(word)
		switch {
		case len(cur) == 0:
			cur = wr
		case len(cur)+1+len(wr) <= width:
			cur = append(append(cur, ' '), wr...)
		default:
			lines = append(lines, string(cur))
			cur = wr
		}
	}
	if len(cur) > 0 || len(lines) == 0 {
		lines = append(lines, string(cur))
	}
	return lines
}
