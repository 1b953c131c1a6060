package reporttest

import (
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/cnibench/cnibench/pkg/result"
)

// Sweep shapes as the egress-filter and services scenarios write them
// (their texts shortened): the report package cannot import the
// scenarios, and a test of the report should not change when a
// scenario's wording does.
var (
	EgressShape = result.ScenarioShape{
		Scenario: "egress-filter",
		Sweep: &result.SweepShape{
			X: "rules", XText: "rules", Series: "mechanism", SeriesHeader: "Mechanism", Variant: "traversal", Baseline: "none",
			Intro:        "Every metric against the number of deny rules (log scale), one line per mechanism (none = nothing loaded, dashed).",
			PointMetrics: []string{"filter_setup_seconds"},
			PointLead:    "Loading the filter: set-up until a denied probe is proven dropped.",
		},
		MetricTitles: map[string]string{"filter_setup_seconds": "Set-up until enforced"},
	}
	ServicesShape = result.ScenarioShape{
		Scenario: "services",
		Sweep: &result.SweepShape{
			X: "services", XText: "services", Series: "implementation", SeriesHeader: "Implementation", Baseline: "none",
			Intro:        "Every metric against the number of services in the table (log scale), one line per implementation.",
			PointMetrics: []string{"svc_setup_seconds"},
			PointLead:    "Loading the services: time to load the table.",
		},
		MetricTitles: map[string]string{"svc_setup_seconds": "Loading the services"},
	}
)

// SweepOptions describe a synthetic sweep document: one cell (tcp_rr,
// cross-node, 1 flow) per point, five repeats, on a cluster's CNI when
// CNI is set (labels cni, cni_mode, cni_version), else on the lab.
type SweepOptions struct {
	Shape              result.ScenarioShape
	CNI, Mode, Version string
	// Series are the values of the shape's series label; Xs its x values.
	Series []string
	Xs     []int
	// Cost is each series' extra cost per decade of N (0: flat; the
	// shape's baseline series costs nothing): latency and CPU grow by
	// 1 + Cost·log10(N), the transaction rate falls by as much, and the
	// per-point set-up takes Cost·N/1000 s more.
	Cost map[string]float64
	// Failed and Skipped, keyed "series/N", are points whose every repeat
	// failed with that error, or that were recorded skipped with that
	// reason ("too large: …").
	Failed, Skipped map[string]string
	// Labels are added to every run (kube_proxy_mode, …).
	Labels map[string]string
	Seed   uint64
	Start  time.Time
}

// SweepSet returns the synthetic sweep document o describes.
func SweepSet(o SweepOptions) *result.Set {
	if o.Start.IsZero() {
		o.Start = time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x73776565702d6e))
	sh := o.Shape
	sw := sh.Sweep
	dp := "veth-routing"
	s := &result.Set{
		Schema: result.SchemaResults,
		Tool:   result.Tool{Name: "cnibench", Version: "v0.0.0-test"},
		Start:  o.Start, End: o.Start.Add(time.Hour),
		Host:   result.Host{Hostname: "testhost", CPUModel: "Synthetic CPU", Cores: 2, Kernel: "6.1.0-test"},
		Config: map[string]string{"scenario": sh.Scenario, "repeat": "5"},
		Shape:  &sh,
	}
	base := map[string]string{}
	if o.CNI != "" {
		dp = "cni-" + o.CNI
		s.Config["backend"], s.Config["cluster"] = "kubernetes", "kind-"+o.CNI
		base = map[string]string{"cni": o.CNI, "cni_mode": o.Mode, "cni_version": o.Version}
	}
	s.Datapaths = []result.Datapath{{Name: dp, Description: "the datapath under test"}}
	for k, v := range o.Labels {
		base[k] = v
	}
	t := o.Start
	for _, ser := range o.Series {
		cost := o.Cost[ser]
		if ser == sw.Baseline {
			cost = 0
		}
		for _, n := range o.Xs {
			l := map[string]string{"scenario": sh.Scenario, sw.Series: ser, sw.X: strconv.Itoa(n),
				"datapath": dp, "path": "cross-node", "flows": "1", "mtu": "1500", "test": "tcp_rr"}
			if sw.Variant != "" {
				l[sw.Variant] = "every-packet"
			}
			for k, v := range base {
				l[k] = v
			}
			key := ser + "/" + strconv.Itoa(n)
			if reason, ok := o.Skipped[key]; ok {
				sl := map[string]string{}
				for k, v := range l {
					if k != "datapath" && k != "path" && k != "flows" && k != "mtu" && k != "test" {
						sl[k] = v
					}
				}
				s.Skipped = append(s.Skipped, result.Skip{Labels: sl, Reason: reason})
				continue
			}
			run := result.Run{Labels: l}
			grow := 1 + cost*math.Log10(float64(n))
			for i := range 5 {
				rep := result.Repeat{Index: i, Start: t, DurationSec: 2}
				t = t.Add(5 * time.Second)
				if reason, ok := o.Failed[key]; ok {
					rep.Error = reason
					run.Repeats = append(run.Repeats, rep)
					continue
				}
				jit := func() float64 { return 1 + 0.04*(rng.Float64()-0.5) }
				rep.Metrics = map[string]float64{
					result.TransPerSec:  round(40000 / grow * jit()),
					result.LatencyUsP50: round(22 * grow * jit()),
					result.LatencyUsP99: round(60 * grow * jit()),
					result.HostCPUPct:   round(150 * grow * jit()),
				}
				for _, pm := range sw.PointMetrics {
					rep.Metrics[pm] = round((0.002 + cost*float64(n)/1000) * jit())
				}
				run.Repeats = append(run.Repeats, rep)
			}
			run.Summary = result.SummarizeRepeats(run.Repeats)
			s.Runs = append(s.Runs, run)
		}
	}
	s.End = t
	return s
}
