package report

// What other report views (internal/report/field: several runs side by
// side) share with this one, exported so that they grade, colour and
// format exactly as the single-run report does instead of copying it.

// Class is the cell's CSS class as the summary colours it: its grade's,
// or the gradient class of the two grades its interval spans; "g-none"
// for a cell without a grade.
func (c GradedCell) Class() string {
	return gradeCell{Grade: c.Grade, Ratio: c.Ratio, Lo: c.Lo, Hi: c.Hi, NotTrusted: c.NotTrusted}.class()
}

// GradeMark is the Markdown mark of a grade class (Class, VerdictClass):
// one coloured circle and a space, two for a span; "" for other classes.
func GradeMark(class string) string { return gradeMark(class) }

// VerdictClass is the grade class a check's verdict is coloured with
// (what works green, what deserves a look orange, what is wrong red; ""
// for verdicts that judge nothing).
func VerdictClass(verdict string) string { return verdictClass(verdict) }

// FindingMetric renders a check's metric with its unit, as the report's
// Checks section does (memory_bytes_* in MiB, cpu_millicores_* in mCPU,
// *_pct in %).
func FindingMetric(name string, v float64) string { return formatFindingMetric(name, v) }

// MarkdownEscape escapes s for a Markdown paragraph or table cell.
func MarkdownEscape(s string) string { return mdEsc(s) }
