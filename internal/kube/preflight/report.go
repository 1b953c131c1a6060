package preflight

import (
	"fmt"
	"strings"
	"text/tabwriter"
)

// String renders r as a compact table: one line per namespace (whether it
// exists, its Pod Security levels), one row per object (verdict, what
// refused it, why), then the fixes of the refused objects and the
// warnings.
func (r Report) String() string {
	var b strings.Builder
	for _, n := range r.Namespaces {
		b.WriteString("namespace " + n.Name + ": " + n.describe() + "\n")
	}
	if len(r.Objects) > 0 {
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "OBJECT\tVERDICT\tBY\tREASON")
		for _, o := range r.Objects {
			reason := o.Reason
			if reason == "" && len(o.Warnings) > 0 {
				reason = plural(len(o.Warnings), "warning", "warnings")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", o.Ref(), o.Verdict, dash(o.By), dash(reason))
		}
		tw.Flush()
	}
	var fixes, warnings []string
	for _, o := range r.Objects {
		if o.Fix != "" {
			fixes = append(fixes, "  "+o.Ref()+": "+o.Fix)
		}
		for _, w := range o.Warnings {
			warnings = append(warnings, "  "+o.Ref()+": "+w)
		}
	}
	for _, w := range r.Warnings {
		warnings = append(warnings, "  "+w)
	}
	if len(fixes) > 0 {
		b.WriteString("fixes:\n" + strings.Join(fixes, "\n") + "\n")
	}
	if len(warnings) > 0 {
		b.WriteString("warnings:\n" + strings.Join(warnings, "\n") + "\n")
	}
	return b.String()
}

// describe is n's state on one line.
func (n NamespaceInfo) describe() string {
	switch {
	case n.Err != "":
		return "not read (" + n.Err + ")"
	case !n.Exists && len(n.Labels) == 0:
		return "does not exist"
	}
	var levels []string
	for _, mode := range []string{"enforce", "warn", "audit"} {
		if l := n.PodSecurity(mode); l != "" {
			levels = append(levels, mode+"="+l)
		}
	}
	ps := "no Pod Security labels (the cluster's default applies)"
	if len(levels) > 0 {
		ps = "Pod Security " + strings.Join(levels, " ")
	}
	if !n.Exists {
		return "does not exist; its Namespace object has " + ps
	}
	return "exists, " + ps
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
