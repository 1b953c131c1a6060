package apps

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/pkg/result"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  bool
	}{
		{"4KiB", 4 << 10, false},
		{"4K", 4 << 10, false},
		{"4KB", 4 << 10, false},
		{"1MiB", 1 << 20, false},
		{"64m", 64 << 20, false},
		{"1GiB", 1 << 30, false},
		{"1500", 1500, false},
		{"1500B", 1500, false},
		{" 2M ", 2 << 20, false},
		{"0", 0, true},
		{"-1K", 0, true},
		{"2GiB", 0, true},
		{"K", 0, true},
		{"1.5M", 0, true},
		{"", 0, true},
		{"9223372036854775807G", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestSizeLabel(t *testing.T) {
	for n, want := range map[int64]string{4096: "4KiB", 1 << 20: "1MiB", 64 << 20: "64MiB", 1 << 30: "1GiB", 1500: "1500B", 1536 << 10: "1536KiB"} {
		if got := SizeLabel(n); got != want {
			t.Errorf("SizeLabel(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestNewValidates(t *testing.T) {
	tests := []struct {
		o    Options
		want string
	}{
		{Options{Apps: []string{"smtp"}}, `--apps "smtp": must be among http, ftp, scp`},
		{Options{Apps: []string{"http", "http"}}, `--apps "http": given twice`},
		{Options{Sizes: []string{"4KiB", "4096"}}, `--app-sizes "4096": 4KiB given twice`},
		{Options{Sizes: []string{"lots"}}, `--app-sizes "lots": not a size`},
	}
	for _, tt := range tests {
		_, err := New(tt.o)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("New(%+v): %v, want %q…", tt.o, err, tt.want)
		}
	}
}

// One point per application in a fixed order; cells per size, HTTP's
// twice (keep-alive on and off); labels app, size, keepalive.
func TestPointsAndCells(t *testing.T) {
	s, err := New(Options{Sizes: []string{"4K", "1M"}})
	if err != nil {
		t.Fatal(err)
	}
	pts := s.Points()
	var apps []string
	for _, p := range pts {
		apps = append(apps, p.Labels[LabelApp])
		if p.Labels[scenario.LabelScenario] != ScenarioName {
			t.Errorf("point %v without the scenario label", p.Labels)
		}
	}
	if !slices.Equal(apps, Apps) {
		t.Errorf("points %v, want %v", apps, Apps)
	}
	var got []string
	for _, p := range pts {
		for _, c := range s.Cells(p) {
			got = append(got, c.Test+"/"+c.Labels[LabelSize]+"/"+c.Labels[LabelKeepAlive])
			if n, err := s.sizeOf(c); err != nil || SizeLabel(n) != c.Labels[LabelSize] {
				t.Errorf("cell %v: size %d, %v", c.Labels, n, err)
			}
		}
	}
	want := []string{"app_http/4KiB/on", "app_http/4KiB/off", "app_http/1MiB/on", "app_http/1MiB/off",
		"app_ftp/4KiB/", "app_ftp/1MiB/", "app_scp/4KiB/", "app_scp/1MiB/"}
	if !slices.Equal(got, want) {
		t.Errorf("cells %v\nwant %v", got, want)
	}
	if _, err := s.sizeOf(scenario.Cell{Labels: map[string]string{LabelSize: "3MiB"}}); err == nil {
		t.Error("a size not in the options has a file")
	}
	k8s, _ := New(Options{Backend: "kubernetes"})
	for _, p := range k8s.Points() {
		if !errors.Is(p.Skip, scenario.ErrNeedsLab) || !strings.HasPrefix(p.SkipReason(), "skipped: needs the lab backend") {
			t.Errorf("on kubernetes %v: %v", p.Labels, p.SkipReason())
		}
	}
	one, _ := New(Options{Apps: []string{SCP}})
	if pts := one.Points(); len(pts) != 1 || pts[0].Labels[LabelApp] != SCP || len(one.Cells(pts[0])) != len(DefaultSizes) {
		t.Errorf("--apps scp: %+v", pts)
	}
}

// The flags build the scenario; the report shape is valid: sizes as
// groups, keep-alive as bars.
func TestRegistration(t *testing.T) {
	reg, err := scenario.Lookup(ScenarioName)
	if err != nil {
		t.Fatal(err)
	}
	build, err := reg.Parse("--apps", "http,scp", "--app-sizes", "8KiB")
	if err != nil {
		t.Fatal(err)
	}
	changed := map[string]bool{"apps": true, "app-sizes": true}
	sc, err := build(scenario.Common{Changed: func(f string) bool { return changed[f] }})
	if err != nil {
		t.Fatal(err)
	}
	cfg := sc.(scenario.Configer).Config()
	if cfg["apps"] != "http,scp" || cfg["app_sizes"] != "8KiB" {
		t.Errorf("config %v", cfg)
	}
	sh := sc.(scenario.Shaper).Shape()
	if sh.Valid() != "" || sh.Categorical.Series != LabelKeepAlive || !slices.Contains(sh.Categorical.Metrics["app_scp"], result.ThroughputBitsPerSec) {
		t.Errorf("shape %+v", sh)
	}
	build, _ = reg.Parse("--app-sizes", "4KiB,,1MiB")
	if _, err := build(scenario.Common{Changed: func(f string) bool { return f == "app-sizes" }}); err == nil || !strings.Contains(err.Error(), "--app-sizes") {
		t.Errorf("--app-sizes with an empty element: %v", err)
	}
}
