package proxies

import (
	"errors"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/pkg/result"
)

// pointKey is a point's labels as "proxy/hops/keepalive".
func pointKey(p scenario.Point) string {
	return p.Labels[LabelProxy] + "/" + p.Labels[LabelHops] + "/" + p.Labels[LabelKeepAlive]
}

func TestPoints(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want []string
	}{
		{"defaults", Options{}, []string{"none/0/on", "none/0/off",
			"haproxy/1/on", "haproxy/1/off", "haproxy/2/on", "haproxy/2/off",
			"nginx/1/on", "nginx/1/off", "nginx/2/on", "nginx/2/off"}},
		{"one proxy, keep-alive on", Options{Proxies: []string{Nginx}, KeepAlive: []string{On}}, []string{"none/0/on", "nginx/1/on", "nginx/2/on"}},
		{"no direct point", Options{Proxies: []string{HAProxy}, Hops: []int{2, 1}, KeepAlive: []string{Off}}, []string{"haproxy/2/off", "haproxy/1/off"}},
		{"only direct", Options{Hops: []int{0}}, []string{"none/0/on", "none/0/off"}},
		{"duplicates", Options{Proxies: []string{Nginx, Nginx}, Hops: []int{1, 1}, KeepAlive: []string{On, On}}, []string{"nginx/1/on"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(tc.o)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range s.Points() {
				got = append(got, pointKey(p))
				if p.Labels[scenario.LabelScenario] != ScenarioName || len(p.Labels) != 4 {
					t.Errorf("labels %v", p.Labels)
				}
				back, err := pointOf(p)
				if err != nil {
					t.Errorf("%v: %v", p.Labels, err)
				} else if !maps4Equal(back.labels(), p.Labels) {
					t.Errorf("labels %v do not round-trip: %v", p.Labels, back.labels())
				}
				if runtime.GOOS != "linux" && p.Skip == nil {
					t.Errorf("%v runs on %s", p.Labels, runtime.GOOS)
				}
				if p.Labels[LabelProxy] == None && runtime.GOOS == "linux" && p.Skip != nil {
					t.Errorf("the direct point is skipped: %v", p.Skip)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("points %v, want %v", got, tc.want)
			}
		})
	}
}

func maps4Equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// On another backend than the lab every point is skipped, needing the lab.
func TestPointsOnCluster(t *testing.T) {
	s, err := New(Options{Backend: "kubernetes"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range s.Points() {
		if !errors.Is(p.Skip, scenario.ErrNeedsLab) || !strings.HasPrefix(p.SkipReason(), "skipped: proxies: needs the lab backend") {
			t.Errorf("%v: %q", p.Labels, p.SkipReason())
		}
	}
	if labBackend != lab.BackendName {
		t.Errorf("labBackend %q, the lab's name is %q", labBackend, lab.BackendName)
	}
	onLab, _ := New(Options{Backend: lab.BackendName, Hops: []int{0}})
	if p := onLab.Points()[0]; runtime.GOOS == "linux" && p.Skip != nil {
		t.Errorf("lab: %v", p.Skip)
	}
}

func TestNewErrors(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Proxies: []string{"envoy"}}, `--proxies "envoy": must be among haproxy, nginx (Envoy is in neither`},
		{Options{Proxies: []string{"traefik"}}, `--proxies "traefik": must be among haproxy, nginx`},
		{Options{Hops: []int{3}}, "--hops 3: must be among 0"},
		{Options{Hops: []int{-1}}, "--hops -1: must be among 0"},
		{Options{KeepAlive: []string{"yes"}}, `--proxy-keepalive "yes": must be on or off`},
	} {
		if _, err := New(tc.o); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.o, err, tc.want)
		}
	}
}

func TestPointOfErrors(t *testing.T) {
	l := func(proxy, hops, ka string) scenario.Point {
		return scenario.Point{Labels: map[string]string{LabelProxy: proxy, LabelHops: hops, LabelKeepAlive: ka}}
	}
	for _, tc := range []struct {
		p    scenario.Point
		want string
	}{
		{l(None, "x", On), "hops label"},
		{l(None, "3", On), "hops label"},
		{l(None, "0", "maybe"), "keepalive label"},
		{l(HAProxy, "0", On), "0 hops has no proxy"},
		{l(None, "1", On), "0 hops has no proxy"},
		{l("envoy", "2", On), `unknown proxy "envoy"`},
	} {
		if _, err := pointOf(tc.p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.p.Labels, err, tc.want)
		}
	}
}

func TestCellsAndConfig(t *testing.T) {
	s, _ := New(Options{})
	cells := s.Cells(s.Points()[0])
	if len(cells) != 2 || cells[0].Test != result.TestHTTP || cells[0].Flows != 1 || cells[1].Flows != ConcurrentFlows {
		t.Errorf("cells %+v", cells)
	}
	c := s.Config()
	if !strings.HasPrefix(c["proxies_points"], "none/0/on,none/0/off,haproxy/1/on") || !strings.Contains(c["proxies_envoy"], "Envoy") {
		t.Errorf("config %v", c)
	}
}

// The scenario's flags build it; bad values name the flag.
func TestRegistration(t *testing.T) {
	reg, err := scenario.Lookup(ScenarioName)
	if err != nil {
		t.Fatal(err)
	}
	build, err := reg.Parse("--proxies", "nginx", "--hops", "0,2", "--proxy-keepalive", "off")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := build(scenario.Common{Profile: "quick"})
	if err != nil {
		t.Fatal(err)
	}
	if pts := sc.(scenario.Configer).Config()["proxies_points"]; pts != "none/0/off,nginx/2/off" {
		t.Errorf("proxies_points %q", pts)
	}
	sh := sc.(scenario.Shaper).Shape()
	if sh.Valid() != "" || sh.Categorical.Series != LabelProxy || !slices.Contains(sh.Categorical.Metrics[result.TestHTTP], MetricCPUPct) {
		t.Errorf("shape %+v", sh)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--proxies", "envoy"}, `--proxies "envoy"`},
		{[]string{"--proxies", "nginx,"}, "--proxies \"nginx,\": empty element"},
		{[]string{"--hops", "one"}, `--hops one: "one" is not a whole number`},
		{[]string{"--hops", "5"}, "--hops 5"},
		{[]string{"--proxy-keepalive", "maybe"}, `--proxy-keepalive "maybe"`},
	} {
		build, err := reg.Parse(tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := build(scenario.Common{}); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestCPUMetrics(t *testing.T) {
	m := cpuMetrics(map[string]uint64{RoleClientSidecar: 150, RoleServerSidecar: 50}, 4)
	for k, want := range map[string]float64{
		MetricCPUSeconds: 2, MetricCPUPct: 50,
		RoleMetric(RoleClientSidecar, "cpu_seconds"): 1.5, RoleMetric(RoleClientSidecar, "cpu_pct"): 37.5,
		RoleMetric(RoleServerSidecar, "cpu_seconds"): 0.5, RoleMetric(RoleServerSidecar, "cpu_pct"): 12.5,
	} {
		if math.Abs(m[k]-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", k, m[k], want)
		}
	}
	if len(m) != 6 {
		t.Errorf("metrics %v", m)
	}
	if got := cpuMetrics(nil, 4); len(got) != 0 {
		t.Errorf("no proxies: %v", got)
	}
	if got := cpuMetrics(map[string]uint64{RoleNode: 1}, 0); len(got) != 0 {
		t.Errorf("no span: %v", got)
	}
}
