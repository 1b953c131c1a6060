package result

// ScenarioShape says how a report draws a scenario's runs, so that a
// results document is self-describing: a reader needs no table of its own
// to draw a scenario it has never seen. The suite fills Set.Shape from the
// scenario it ran; documents written before it existed have none (readers
// then fall back to what they know).
//
// Exactly one of Sweep and Categorical is set.
type ScenarioShape struct {
	// Scenario is the value of the runs' scenario label the shape draws.
	Scenario string `json:"scenario"`
	// Sweep draws every metric against a numeric label (rules, services).
	Sweep *SweepShape `json:"sweep,omitempty"`
	// Categorical draws grouped bars (LB mode + transport, by firewall).
	Categorical *CategoricalShape `json:"categorical,omitempty"`
	// MetricTitles title the scenario's own metrics in tables and charts
	// (e.g. filter_setup_seconds: "Set-up until enforced"); other metrics
	// keep the reader's titles.
	MetricTitles map[string]string `json:"metric_titles,omitempty"`
}

// SweepShape draws a scenario against a numeric size label on a log axis,
// one line per value of a series label.
type SweepShape struct {
	// X is the numeric label on the x axis (log scale), e.g. "rules".
	X string `json:"x"`
	// XText is what X counts, in titles and column headers ("rules").
	XText string `json:"x_text"`
	// Series is the label with one line per value ("mechanism").
	Series string `json:"series"`
	// SeriesHeader is the tables' first column header ("Mechanism").
	SeriesHeader string `json:"series_header"`
	// Variant, when set, is a further label splitting a series (dotted
	// lines of the same colour, e.g. "traversal").
	Variant string `json:"variant,omitempty"`
	// Baseline is the Series value drawn dashed grey (nothing loaded,
	// e.g. "none").
	Baseline string `json:"baseline,omitempty"`
	// Intro is the section's first paragraph.
	Intro string `json:"intro"`
	// PointMetrics are the per-point costs (set-up, tear-down, memory),
	// shown first under PointLead.
	PointMetrics []string `json:"point_metrics,omitempty"`
	PointLead    string   `json:"point_lead,omitempty"`
}

// CategoricalShape draws one grouped bar chart per cell and metric: one
// group per combination of the Groups labels, one bar per value of the
// Series label, and a table per cell.
type CategoricalShape struct {
	// Groups are the labels whose combination is a group (x axis).
	Groups []string `json:"groups"`
	// GroupHeaders are their table headers (as many as Groups).
	GroupHeaders []string `json:"group_headers"`
	// Series is the label with one bar per value ("firewall").
	Series       string `json:"series"`
	SeriesHeader string `json:"series_header"`
	// Intro is the section's first paragraph.
	Intro string `json:"intro"`
	// Metrics are the metrics shown for each test (key: the test label's
	// value), in order; a test without an entry gets the reader's
	// defaults.
	Metrics map[string][]string `json:"metrics,omitempty"`
}

// MetricsPerTest builds CategoricalShape.Metrics from a function of the
// test, for every test in Tests.
func MetricsPerTest(f func(test string) []string) map[string][]string {
	m := make(map[string][]string, len(Tests))
	for _, t := range Tests {
		if v := f(t); len(v) > 0 {
			m[t] = v
		}
	}
	return m
}

// Valid reports what is wrong with the shape ("" if nothing): a scenario
// name, exactly one layout, and the fields that layout needs.
func (s ScenarioShape) Valid() string {
	switch {
	case s.Scenario == "":
		return "no scenario"
	case (s.Sweep == nil) == (s.Categorical == nil):
		return "want exactly one of sweep and categorical"
	case s.Sweep != nil && (s.Sweep.X == "" || s.Sweep.Series == ""):
		return "sweep: x and series are required"
	case s.Categorical != nil && (len(s.Categorical.Groups) == 0 || len(s.Categorical.Groups) != len(s.Categorical.GroupHeaders) || s.Categorical.Series == ""):
		return "categorical: groups, as many group headers, and series are required"
	}
	return ""
}
