package proxies

import (
	"github.com/spf13/pflag"

	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/pkg/result"
)

// The scenario's flags.
const (
	flagProxies   = "proxies"
	flagHops      = "hops"
	flagKeepAlive = "proxy-keepalive"
)

func init() {
	scenario.Register(scenario.Registration{
		Name:  ScenarioName,
		Usage: "HTTP latency and requests/s through 0, 1 (a proxy per node) and 2 (a sidecar per pod) L7 proxies, HAProxy and nginx (Envoy is not in the registries), keep-alive on and off, each proxy's CPU",
		Flags: flags,
	})
}

// flags registers --proxies, --hops and --proxy-keepalive.
func flags(fs *pflag.FlagSet) scenario.Builder {
	proxies := fs.String(flagProxies, "", "proxies: comma-separated proxies at 1 and 2 hops: haproxy, nginx (default both; Envoy is in neither Debian's nor Go's registries)")
	hops := fs.String(flagHops, "", "proxies: comma-separated hop counts: 0 (direct), 1 (a proxy on the client's node), 2 (a sidecar in each pod) (default all)")
	keepAlive := fs.String(flagKeepAlive, "", "proxies: comma-separated HTTP keep-alive settings, client and proxies alike: on, off (default both)")
	return func(c scenario.Common) (scenario.Scenario, error) {
		o := Options{Backend: c.Backend}
		var err error
		if o.Proxies, err = scenario.ListFlag(c, flagProxies, *proxies); err != nil {
			return nil, err
		}
		if o.Hops, err = scenario.IntsFlag(c, flagHops, *hops); err != nil {
			return nil, err
		}
		if o.KeepAlive, err = scenario.ListFlag(c, flagKeepAlive, *keepAlive); err != nil {
			return nil, err
		}
		return New(o)
	}
}

// Shape draws one grouped bar chart per cell and metric: groups hops +
// keep-alive, bars the proxy (scenario.Shaper).
func (s *Scenario) Shape() result.ScenarioShape {
	return result.ScenarioShape{
		Scenario: ScenarioName,
		Categorical: &result.CategoricalShape{
			Groups: []string{LabelHops, LabelKeepAlive}, GroupHeaders: []string{"Proxy hops", "Keep-alive"},
			Series: LabelProxy, SeriesHeader: "Proxy",
			Intro: "HTTP GETs of the native engine through 0, 1 and 2 L7 proxies (seed 000's service-mesh latency): 0 hops goes straight to the server pod; " +
				"1 hop through a proxy on the client's node (Cilium's per-node Envoy, Istio ambient); 2 hops through a sidecar in the client pod and one in the server pod (Istio's sidecars), " +
				"addressed directly (no iptables redirection). HAProxy and nginx, one worker each, stand in for Envoy, which is in neither Debian's nor Go's registries. " +
				"Proxy CPU is each proxy's processes' CPU over the cell (warm-up included), in % of one core. Median with 95 % CI.",
			Metrics: result.MetricsPerTest(func(test string) []string {
				if test != result.TestHTTP {
					return nil
				}
				return []string{result.LatencyUsP50, result.LatencyUsP99, result.TransPerSec, MetricCPUPct}
			}),
		},
		MetricTitles: map[string]string{
			MetricCPUPct:                                 "Proxies' CPU (% of a core)",
			MetricCPUSeconds:                             "Proxies' CPU seconds",
			RoleMetric(RoleNode, "cpu_pct"):              "Node proxy's CPU (% of a core)",
			RoleMetric(RoleClientSidecar, "cpu_pct"):     "Client sidecar's CPU (% of a core)",
			RoleMetric(RoleServerSidecar, "cpu_pct"):     "Server sidecar's CPU (% of a core)",
			RoleMetric(RoleNode, "cpu_seconds"):          "Node proxy's CPU seconds",
			RoleMetric(RoleClientSidecar, "cpu_seconds"): "Client sidecar's CPU seconds",
			RoleMetric(RoleServerSidecar, "cpu_seconds"): "Server sidecar's CPU seconds",
			"proxies_setup_seconds":                      "Server and proxies started and proven",
		},
	}
}
