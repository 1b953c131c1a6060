package scenario

import (
	"errors"
	"maps"
)

// Escalation is implemented by scenarios whose points load a backend more
// and more along one parameter (a deny set's size), where a point that
// fails at one size predicts the failure of every larger one, and a larger
// one could harm the backend (a CNI agent that crash-loops on a large
// policy, an etcd near its limits). The suite then runs each series'
// points in ascending size within every repeat (the series themselves
// stay shuffled among each other), and once a point of a series failed,
// its larger points are recorded "not run: …" without being attempted.
// A scenario that escalates on one backend only returns ok false on the
// others.
type Escalation interface {
	// Escalates returns p's series (the points that grow together, e.g.
	// one mechanism and traversal) and its size in it; ok false: p is
	// scheduled as any other point.
	Escalates(p Point) (series string, size int, ok bool)
}

// PointFailure is a Prepare error that carries what was observed when the
// point failed, beyond its message: the suite records it as a finding
// (check FailureCheck) with the evidence and figures, besides the point's
// failure itself. Err is the failure (errors.Is and errors.As see through
// it: ErrNotEnforced keeps its meaning).
type PointFailure struct {
	Err error
	// What names the failed step or component in a few words ("cilium-policy
	// with 100000 rules").
	What string
	// Evidence is one fact per line: what was sent so far, the component's
	// restarts, its own log lines from the point's window.
	Evidence []string
	// Metrics are figures measured up to the failure, units in their names
	// (policy_objects, policy_bytes, cni_restarts).
	Metrics map[string]float64
}

// FailureCheck is the check name of the findings the suite records for a
// PointFailure.
const FailureCheck = "point_failure"

func (f *PointFailure) Error() string {
	if f.Err == nil {
		return f.What + ": failed"
	}
	return f.Err.Error()
}

func (f *PointFailure) Unwrap() error { return f.Err }

// WithEvidence wraps err in a PointFailure with the evidence and metrics
// (err unchanged when it is nil or already carries a PointFailure: its
// evidence is added to that one).
func WithEvidence(err error, what string, evidence []string, metrics map[string]float64) error {
	if err == nil {
		return nil
	}
	var pf *PointFailure
	if errors.As(err, &pf) {
		pf.Evidence = append(pf.Evidence, evidence...)
		if len(metrics) > 0 && pf.Metrics == nil {
			pf.Metrics = map[string]float64{}
		}
		maps.Copy(pf.Metrics, metrics)
		return err
	}
	return &PointFailure{Err: err, What: what, Evidence: evidence, Metrics: metrics}
}
