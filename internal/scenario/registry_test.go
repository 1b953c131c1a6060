package scenario

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/cnibench/cnibench/pkg/result"
)

// nameOnly is a scenario with a name and nothing else.
type nameOnly string

func (n nameOnly) Name() string                                        { return string(n) }
func (nameOnly) Points() []Point                                       { return nil }
func (nameOnly) Prepare(context.Context, Env, Point) (Prepared, error) { return nil, nil }
func (nameOnly) Close(context.Context) error                           { return nil }

// built is what a fake scenario's builder saw.
type built struct {
	nameOnly
	c      Common
	values map[string]string
}

// fakeReg registers flags on the scenario's behalf and builds a scenario
// that records what its builder saw.
func fakeReg(name string, flags []string, selects ...string) Registration {
	return Registration{
		Name: name, Usage: name + " measures something", Selects: selects,
		Flags: func(fs *pflag.FlagSet) Builder {
			vals := map[string]*string{}
			for _, f := range flags {
				vals[f] = fs.String(f, "", name+": the "+f)
			}
			return func(c Common) (Scenario, error) {
				b := &built{nameOnly: nameOnly(name), c: c, values: map[string]string{}}
				for f, v := range vals {
					if c.FlagChanged(f) {
						b.values[f] = *v
					}
				}
				return b, nil
			}
		},
	}
}

// today's four scenarios, as far as their flags go.
func fakeRegistry() *registry {
	g := &registry{m: map[string]Registration{}}
	g.register(fakeReg("egress-filter", []string{"mechanisms", "rules", "filter-traversal"}))
	g.register(fakeReg("services", []string{"implementations", "services"}))
	g.register(fakeReg("l4lb", []string{"lb-modes"}))
	g.register(fakeReg("encryption", []string{"encrypt"}, "encrypt"))
	return g
}

func panicOf(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg, _ = r.(string)
		}
	}()
	f()
	return ""
}

func TestRegister(t *testing.T) {
	ok := fakeReg("a", []string{"x"})
	tests := []struct {
		name string
		reg  func(Registration) Registration
		want string // panic substring; "" for none
	}{
		{"valid", func(r Registration) Registration { return r }, ""},
		{"duplicate", func(r Registration) Registration { r.Name = "dup"; return r }, `scenario "dup" registered twice`},
		{"no name", func(r Registration) Registration { r.Name = ""; return r }, "invalid scenario name"},
		{"name with a comma", func(r Registration) Registration { r.Name = "a,b"; return r }, "invalid scenario name"},
		{"no usage", func(r Registration) Registration { r.Usage = ""; return r }, "Usage must be one line"},
		{"usage on two lines", func(r Registration) Registration { r.Usage = "a\nb"; return r }, "Usage must be one line"},
		{"no flags hook", func(r Registration) Registration { r.Flags = nil; return r }, "no Flags hook"},
		{"legacy shape", func(r Registration) Registration { r.LegacyShape = sweepOf("a"); return r }, ""},
		{"another's legacy shape", func(r Registration) Registration { r.LegacyShape = sweepOf("b"); return r }, `its legacy shape names scenario "b"`},
		{"invalid legacy shape", func(r Registration) Registration {
			r.LegacyShape = sweepOf("a")
			r.LegacyShape.Sweep.Series = ""
			return r
		}, "legacy shape: sweep: x and series are required"},
	}
	for _, tt := range tests {
		g := &registry{m: map[string]Registration{}}
		g.register(fakeReg("dup", nil))
		got := panicOf(func() { g.register(tt.reg(ok)) })
		switch {
		case tt.want == "" && got != "":
			t.Errorf("%s: panic %q", tt.name, got)
		case tt.want != "" && !strings.Contains(got, tt.want):
			t.Errorf("%s: panic %q, want one containing %q", tt.name, got, tt.want)
		}
	}
}

func sweepOf(scenario string) *result.ScenarioShape {
	return &result.ScenarioShape{Scenario: scenario, Sweep: &result.SweepShape{X: "n", Series: "impl"}}
}

// Register hands a scenario's metrics, owned by its name, and its legacy
// shape to pkg/result.
func TestPublish(t *testing.T) {
	r := fakeReg("test-publish", nil)
	r.Metrics = map[string]result.MetricInfo{"test_publish_seconds": {Unit: "s", Better: result.Neutral, Help: "published"}}
	r.LegacyShape = sweepOf("test-publish")
	publish(r)
	if m, ok := result.Known("test_publish_seconds"); !ok || m.Help != "published" {
		t.Errorf("metric: %+v, %v", m, ok)
	}
	if i := slices.IndexFunc(result.Definitions(), func(d result.Definition) bool { return d.Name == "test_publish_seconds" }); i < 0 || result.Definitions()[i].Owner != "test-publish" {
		t.Errorf("owner of test_publish_seconds: index %d", i)
	}
	if sh, ok := result.LegacyShape("test-publish"); !ok || sh.Sweep.Series != "impl" {
		t.Errorf("legacy shape: %+v, %v", sh, ok)
	}
	// A second registration of the metric panics (two owners of a name).
	if got := panicOf(func() { publish(fakeReg("test-publish-2", nil)) }); got != "" {
		t.Errorf("nothing to publish: panic %q", got)
	}
	r.Name, r.LegacyShape = "test-publish-2", nil
	if got := panicOf(func() { publish(r) }); !strings.Contains(got, "already test-publish's") {
		t.Errorf("a metric registered twice: panic %q", got)
	}
}

func TestLookupAndNames(t *testing.T) {
	g := fakeRegistry()
	if got := g.names(); !slices.Equal(got, []string{"egress-filter", "encryption", "l4lb", "services"}) {
		t.Errorf("names %v, want them sorted", got)
	}
	if r, err := g.lookup("l4lb"); err != nil || r.Name != "l4lb" {
		t.Errorf("lookup l4lb: %+v, %v", r, err)
	}
	_, err := g.lookup("mesh")
	if err == nil || err.Error() != `unknown scenario "mesh" (known: egress-filter, encryption, l4lb, services)` {
		t.Errorf("lookup mesh: %v", err)
	}
	_, err = (&registry{m: map[string]Registration{}}).lookup("mesh")
	if err == nil || !strings.Contains(err.Error(), "none registered") {
		t.Errorf("lookup in an empty registry: %v", err)
	}
}

// A scenario's flags are bound onto the command's flag set; given without
// their scenario, or with another, they are refused with one line naming
// the flags and the scenario they belong to. A selecting flag (--encrypt)
// chooses its scenario by itself.
func TestSelect(t *testing.T) {
	tests := []struct {
		args     []string
		scenario string // --scenario
		want     string // scenario selected
		err      string // exact error; "" for none
		values   map[string]string
	}{
		{args: nil, want: ""},
		{args: []string{"--rules", "10"}, err: "--mechanisms, --rules and --filter-traversal need --scenario egress-filter"},
		{args: []string{"--filter-traversal", "x"}, err: "--mechanisms, --rules and --filter-traversal need --scenario egress-filter"},
		{args: []string{"--rules", "10"}, scenario: "services", err: "--mechanisms, --rules and --filter-traversal are options of --scenario egress-filter, not services"},
		{args: []string{"--implementations", "iptables"}, scenario: "egress-filter", err: "--implementations and --services are options of --scenario services, not egress-filter"},
		{args: []string{"--services", "1"}, err: "--implementations and --services need --scenario services"},
		{args: []string{"--lb-modes", "snat-direct"}, err: "--lb-modes needs --scenario l4lb"},
		{args: []string{"--lb-modes", "snat-direct"}, scenario: "egress-filter", err: "--lb-modes is an option of --scenario l4lb, not egress-filter"},
		{args: []string{"--encrypt", "wireguard"}, scenario: "l4lb", err: "--encrypt runs the encryption scenario, not l4lb: drop one of --encrypt and --scenario"},
		{args: []string{"--encrypt", "wireguard", "--rules", "10"}, err: "--mechanisms, --rules and --filter-traversal are options of --scenario egress-filter, not encryption"},
		{args: nil, scenario: "mesh", err: `--scenario "mesh": must be one of egress-filter, encryption, l4lb, services`},
		{args: []string{"--rules", "10"}, scenario: "mesh", err: `--scenario "mesh": must be one of egress-filter, encryption, l4lb, services`},
		{args: []string{"--encrypt", "wireguard"}, want: "encryption", values: map[string]string{"encrypt": "wireguard"}},
		{args: []string{"--encrypt", "ipsec"}, scenario: "encryption", want: "encryption", values: map[string]string{"encrypt": "ipsec"}},
		{args: []string{"--rules", "10,1000", "--mechanisms", "none"}, scenario: "egress-filter", want: "egress-filter", values: map[string]string{"rules": "10,1000", "mechanisms": "none"}},
		{args: []string{"--rules", ""}, scenario: "egress-filter", want: "egress-filter", values: map[string]string{"rules": ""}},
		{args: nil, scenario: "services", want: "services", values: map[string]string{}},
	}
	for _, tt := range tests {
		fs := pflag.NewFlagSet("suite", pflag.ContinueOnError)
		fs.String("scenario", "", "")
		f := fakeRegistry().bindFlags(fs)
		if err := fs.Parse(tt.args); err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		name, build, err := f.Select(tt.scenario)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("%v --scenario %q: error %v, want %q", tt.args, tt.scenario, err, tt.err)
			}
			continue
		}
		if err != nil || name != tt.want || (name == "") != (build == nil) {
			t.Errorf("%v --scenario %q: %q, builder %v, %v; want %q", tt.args, tt.scenario, name, build != nil, err, tt.want)
			continue
		}
		if build == nil {
			continue
		}
		sc, err := build(Common{Profile: "quick", Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		b := sc.(*built)
		if b.c.Profile != "quick" || b.c.Seed != 7 || len(b.values) != len(tt.values) {
			t.Errorf("%v: builder saw %+v, values %v; want %v", tt.args, b.c, b.values, tt.values)
		}
		for k, v := range tt.values {
			if b.values[k] != v {
				t.Errorf("%v: --%s = %q, want %q", tt.args, k, b.values[k], v)
			}
		}
	}
}

func TestBindFlagsRefusesCollisions(t *testing.T) {
	tests := []struct {
		name string
		regs []Registration
		want string
	}{
		{"two scenarios, one flag", []Registration{fakeReg("a", []string{"rules"}), fakeReg("b", []string{"rules"})}, "scenario b: flag --rules is already scenario a's"},
		{"the command's flag", []Registration{fakeReg("a", []string{"seed"})}, "scenario a: flag --seed is already one of the command's"},
		{"selects another flag", []Registration{fakeReg("a", []string{"x"}, "y")}, "scenario a: Selects names --y, which is not one of its flags"},
	}
	for _, tt := range tests {
		g := &registry{m: map[string]Registration{}}
		for _, r := range tt.regs {
			g.register(r)
		}
		fs := pflag.NewFlagSet("suite", pflag.ContinueOnError)
		fs.Uint64("seed", 0, "")
		if got := panicOf(func() { g.bindFlags(fs) }); got != tt.want {
			t.Errorf("%s: panic %q, want %q", tt.name, got, tt.want)
		}
	}
}

// Parse builds a scenario from arguments, without a command: its
// defaults without arguments.
func TestParse(t *testing.T) {
	r := fakeReg("egress-filter", []string{"mechanisms", "rules"})
	build, err := r.Parse("--rules", "10")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := build(Common{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if b := sc.(*built); b.values["rules"] != "10" || len(b.values) != 1 || b.c.Seed != 3 {
		t.Errorf("built %+v", b)
	}
	if build, err = r.Parse(); err != nil {
		t.Fatal(err)
	}
	if sc, _ := build(Common{}); len(sc.(*built).values) != 0 {
		t.Errorf("defaults saw flags: %v", sc.(*built).values)
	}
	if _, err := r.Parse("--lb-modes", "x"); err == nil || !strings.Contains(err.Error(), "lb-modes") {
		t.Errorf("another scenario's flag: %v", err)
	}
	if _, err := r.Parse("stray"); err == nil {
		t.Error("a stray argument was accepted")
	}
	// A builder that returns another scenario is caught.
	other := fakeReg("a", nil)
	inner := other.Flags
	other.Flags = func(fs *pflag.FlagSet) Builder {
		inner(fs)
		return func(Common) (Scenario, error) { return nameOnly("b"), nil }
	}
	build, _ = other.Parse()
	if _, err := build(Common{}); err == nil || !strings.Contains(err.Error(), `scenario named "b"`) {
		t.Errorf("misnamed scenario: %v", err)
	}
}

func TestListFlags(t *testing.T) {
	changed := Common{Changed: func(string) bool { return true }}
	tests := []struct {
		c     Common
		value string
		want  []int
		err   string
	}{
		{Common{}, "", nil, ""},
		{changed, "10,1000", []int{10, 1000}, ""},
		{changed, " 10 , 20", []int{10, 20}, ""},
		{changed, "10,,100", nil, `--rules "10,,100": empty element; separate values with single commas, e.g. --rules a,b`},
		{changed, "", nil, `--rules "": empty element; separate values with single commas, e.g. --rules a,b`},
		{changed, "x", nil, `--rules x: "x" is not a whole number`},
	}
	for _, tt := range tests {
		got, err := IntsFlag(tt.c, "rules", tt.value)
		if (err == nil) != (tt.err == "") || (err != nil && err.Error() != tt.err) || !slices.Equal(got, tt.want) {
			t.Errorf("IntsFlag(%q) = %v, %v; want %v, %q", tt.value, got, err, tt.want, tt.err)
		}
	}
	if got, err := ListFlag(changed, "mechanisms", "none, ipset"); err != nil || !slices.Equal(got, []string{"none", "ipset"}) {
		t.Errorf("ListFlag = %v, %v", got, err)
	}
}
