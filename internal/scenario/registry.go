package scenario

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/spf13/pflag"

	"github.com/cnibench/cnibench/pkg/result"
)

// A scenario package registers itself from its init (register.go):
//
//	func init() {
//		scenario.Register(scenario.Registration{
//			Name:  ScenarioName,
//			Usage: "egress filtering at scale: mechanisms × deny-set sizes",
//			Flags: func(fs *pflag.FlagSet) scenario.Builder {
//				rules := fs.String("rules", "", "egress-filter: …")
//				return func(c scenario.Common) (scenario.Scenario, error) { … }
//			},
//			Metrics: metrics, // its own metrics, documented (metrics.go)
//		})
//	}
//
// and is linked into the binary by one blank import (internal/cli/suite's
// scenarios.go). The suite's command binds every registered scenario's
// flags (BindFlags), refuses a scenario's flags without it, and hands the
// suite the chosen scenario's Builder; the suite builds it, records its
// Config (Configer) and report Shape (Shaper). The scenario's metrics (and
// the legacy shape of a scenario older than shapes) go to pkg/result,
// where reports find them. Nothing outside the scenario's package names
// it.

// Common is what the suite knows when it builds a scenario.
type Common struct {
	// Profile is the suite's profile (quick, standard): a scenario may
	// default to fewer points with quick.
	Profile string
	// Seed is the run's seed (recorded in the results' config), for what
	// the scenario generates (e.g. deny sets).
	Seed uint64
	// Changed reports whether one of the scenario's own flags was given
	// (set by BindFlags' and Parse's builders; nil: none was).
	Changed func(flag string) bool
	// Backend names where the points run ("lab", "kubernetes"): a
	// scenario's defaults (which mechanisms, implementations) and bounds
	// may depend on it.
	Backend string
	// BackendConfig is the backend's part of the results' config (the
	// lab's pin, wire, …): a scenario refuses, before anything is built, a
	// point that this configuration cannot run.
	BackendConfig map[string]string
	// ClusterScale says the cluster may take thousands of objects
	// (--cluster-scale): a scenario raises its cluster bounds.
	ClusterScale bool
}

// FlagChanged reports whether the scenario's flag name was given.
func (c Common) FlagChanged(name string) bool { return c.Changed != nil && c.Changed(name) }

// Builder builds a scenario from its parsed flags; errors name the flag.
type Builder func(Common) (Scenario, error)

// Registration is a scenario as the suite's command knows it.
type Registration struct {
	// Name is the scenario's name (--scenario NAME, the scenario label);
	// the built Scenario's Name must return it.
	Name string
	// Usage says in one line what the scenario measures.
	Usage string
	// Flags registers the scenario's own flags on fs (their names must not
	// collide with the suite's or another scenario's; help texts start
	// with the scenario's name, e.g. "egress-filter: …") and returns the
	// builder that reads them once parsed. It is called once per flag
	// set.
	Flags func(fs *pflag.FlagSet) Builder
	// Selects are flags of the scenario that select it by themselves,
	// without --scenario (e.g. --encrypt runs the encryption scenario).
	Selects []string
	// Metrics documents the metrics the scenario reports beyond the
	// engine's (its set-up costs, its proof's counters): Register adds
	// them to pkg/result's (result.RegisterMetrics, owned by the scenario's
	// name), so that reports, comparisons and exports know their units,
	// directions and meanings. docs/results.md mirrors them.
	Metrics map[string]result.MetricInfo
	// LegacyShape is how reports draw the scenario's runs in results
	// documents without a shape, those written before results carried
	// one (result.Set.Shape): only scenarios older than that set it
	// (result.RegisterLegacyShape). It names the scenario.
	LegacyShape *result.ScenarioShape
}

// Configer is implemented by scenarios that record their options in the
// results' config (mechanisms, rules, seed, the cells they run, …).
type Configer interface {
	Config() map[string]string
}

// Shaper is implemented by scenarios that say how a report draws them: the
// suite writes the shape into the results document (result.Set.Shape), so
// that reports need no table of their own.
type Shaper interface {
	Shape() result.ScenarioShape
}

// registry holds registrations by name; the package's is filled by the
// scenario packages' init functions (tests make their own).
type registry struct {
	mu sync.RWMutex
	m  map[string]Registration
}

var registered = &registry{m: map[string]Registration{}}

// Register adds a scenario, its metrics and its legacy shape; called from
// the scenario package's init. It panics on a registration without a name,
// usage or flags hook, with a name already registered (two packages
// claiming one --scenario value), with a legacy shape that is invalid or
// names another scenario, and on a metric defined twice.
func Register(r Registration) {
	registered.register(r)
	publish(r)
}

// publish hands the registration's metrics and legacy shape to pkg/result,
// where every reader of results finds them.
func publish(r Registration) {
	if len(r.Metrics) > 0 {
		result.RegisterMetrics(r.Name, r.Metrics)
	}
	if r.LegacyShape != nil {
		result.RegisterLegacyShape(*r.LegacyShape)
	}
}

// Lookup returns a registered scenario; the error lists the known ones.
func Lookup(name string) (Registration, error) { return registered.lookup(name) }

// Names lists the registered scenarios, sorted.
func Names() []string { return registered.names() }

func (g *registry) register(r Registration) {
	switch {
	case r.Name == "" || strings.ContainsAny(r.Name, " ,\t\n"):
		panic(fmt.Sprintf("scenario.Register: invalid scenario name %q", r.Name))
	case r.Usage == "" || strings.Contains(r.Usage, "\n"):
		panic(fmt.Sprintf("scenario.Register(%q): Usage must be one line", r.Name))
	case r.Flags == nil:
		panic(fmt.Sprintf("scenario.Register(%q): no Flags hook", r.Name))
	case r.LegacyShape != nil && r.LegacyShape.Scenario != r.Name:
		panic(fmt.Sprintf("scenario.Register(%q): its legacy shape names scenario %q", r.Name, r.LegacyShape.Scenario))
	case r.LegacyShape != nil && r.LegacyShape.Valid() != "":
		panic(fmt.Sprintf("scenario.Register(%q): legacy shape: %s", r.Name, r.LegacyShape.Valid()))
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, dup := g.m[r.Name]; dup {
		panic(fmt.Sprintf("scenario.Register: scenario %q registered twice (two packages claim --scenario %s)", r.Name, r.Name))
	}
	r.Selects = slices.Clone(r.Selects)
	g.m[r.Name] = r
}

func (g *registry) lookup(name string) (Registration, error) {
	g.mu.RLock()
	r, ok := g.m[name]
	g.mu.RUnlock()
	if !ok {
		known := "none registered"
		if names := g.names(); len(names) > 0 {
			known = strings.Join(names, ", ")
		}
		return Registration{}, fmt.Errorf("unknown scenario %q (known: %s)", name, known)
	}
	return r, nil
}

func (g *registry) names() []string {
	g.mu.RLock()
	defer g.mu.RUnlock()
	out := make([]string, 0, len(g.m))
	for n := range g.m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Parse registers the scenario's flags on a flag set of its own, parses
// args (e.g. "--rules", "10,1000") and returns the builder (no args: the
// scenario's defaults). For callers without a command line (tests, the
// suite given only a name).
func (r Registration) Parse(args ...string) (Builder, error) {
	fs := pflag.NewFlagSet(r.Name, pflag.ContinueOnError)
	fs.SetOutput(discard{})
	build := r.Flags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", r.Name, err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("scenario %s: unexpected argument %q", r.Name, fs.Arg(0))
	}
	return bind(r.Name, build, changedIn(fs)), nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// changedIn reports the flags given on fs. It asks the flag itself, not
// fs: when fs's flags were added to a command's flag set, that set parses
// them and marks the flag, not fs.
func changedIn(fs *pflag.FlagSet) func(string) bool {
	return func(name string) bool {
		f := fs.Lookup(name)
		return f != nil && f.Changed
	}
}

// bind wraps a registration's builder: Changed from its flags, and the
// built scenario's name checked.
func bind(name string, build Builder, changed func(string) bool) Builder {
	return func(c Common) (Scenario, error) {
		if build == nil {
			return nil, fmt.Errorf("scenario %s: its Flags hook returned no builder", name)
		}
		c.Changed = changed
		sc, err := build(c)
		if err != nil {
			return nil, err
		}
		if sc == nil || sc.Name() != name {
			return nil, fmt.Errorf("scenario %s: its builder returned a scenario named %q", name, nameOf(sc))
		}
		return sc, nil
	}
}

func nameOf(sc Scenario) string {
	if sc == nil {
		return ""
	}
	return sc.Name()
}

// Flags are every registered scenario's flags bound onto one command's
// flag set (BindFlags).
type Flags struct {
	scenarios []boundScenario // by name
}

type boundScenario struct {
	reg   Registration
	flags []string // in the order the scenario registered them
	build Builder
	fs    *pflag.FlagSet
}

// BindFlags registers every registered scenario's flags on fs. It panics
// when a scenario's flag collides with one already on fs or another
// scenario's, or when a Selects entry is not one of its flags: both are
// programming errors found by any test that builds the command.
func BindFlags(fs *pflag.FlagSet) *Flags { return registered.bindFlags(fs) }

func (g *registry) bindFlags(fs *pflag.FlagSet) *Flags {
	f := &Flags{}
	owner := map[string]string{}
	for _, name := range g.names() {
		reg, _ := g.lookup(name)
		own := pflag.NewFlagSet(name, pflag.ContinueOnError)
		// Unsorted: VisitAll then walks the flags in the hook's order,
		// which messages keep ("--mechanisms, --rules and
		// --filter-traversal").
		own.SortFlags = false
		b := boundScenario{reg: reg, fs: own}
		b.build = bind(name, reg.Flags(own), changedIn(own))
		own.VisitAll(func(fl *pflag.Flag) {
			switch {
			case owner[fl.Name] != "":
				panic(fmt.Sprintf("scenario %s: flag --%s is already scenario %s's", name, fl.Name, owner[fl.Name]))
			case fs.Lookup(fl.Name) != nil:
				panic(fmt.Sprintf("scenario %s: flag --%s is already one of the command's", name, fl.Name))
			case fl.Shorthand != "" && fs.ShorthandLookup(fl.Shorthand) != nil:
				panic(fmt.Sprintf("scenario %s: shorthand -%s of --%s is already taken", name, fl.Shorthand, fl.Name))
			}
			owner[fl.Name] = name
			b.flags = append(b.flags, fl.Name)
		})
		for _, s := range reg.Selects {
			if !slices.Contains(b.flags, s) {
				panic(fmt.Sprintf("scenario %s: Selects names --%s, which is not one of its flags", name, s))
			}
		}
		fs.AddFlagSet(own)
		f.scenarios = append(f.scenarios, b)
	}
	return f
}

// Owner returns the scenario a flag belongs to ("" if none).
func (f *Flags) Owner(flag string) string {
	for _, b := range f.scenarios {
		if slices.Contains(b.flags, flag) {
			return b.reg.Name
		}
	}
	return ""
}

// Select resolves the scenario of a command line once parsed: the one
// named by --scenario (name), or, without it, the one selected by one of
// its Selects flags ("" and nil: the matrix). It refuses, with one line
// naming the flag and the scenario it belongs to, an unknown name, a
// scenario's flags without it or with another scenario, and selecting
// flags that disagree with --scenario or with each other.
func (f *Flags) Select(name string) (string, Builder, error) {
	given := func(b boundScenario) []string {
		var out []string
		for _, n := range b.flags {
			if b.fs.Lookup(n).Changed {
				out = append(out, n)
			}
		}
		return out
	}
	// Selecting flags first: they decide the scenario without --scenario.
	selected, by := "", ""
	for _, b := range f.scenarios {
		for _, s := range b.reg.Selects {
			if !b.fs.Lookup(s).Changed {
				continue
			}
			switch {
			case name != "" && name != b.reg.Name:
				return "", nil, fmt.Errorf("--%s runs the %s scenario, not %s: drop one of --%s and --scenario", s, b.reg.Name, name, s)
			case selected != "" && selected != b.reg.Name:
				return "", nil, fmt.Errorf("--%s runs the %s scenario, --%s the %s scenario: drop one of them", by, selected, s, b.reg.Name)
			}
			selected, by = b.reg.Name, s
		}
	}
	if name == "" {
		name = selected
	}
	if name != "" && !slices.ContainsFunc(f.scenarios, func(b boundScenario) bool { return b.reg.Name == name }) {
		return "", nil, fmt.Errorf("--scenario %q: must be one of %s", name, strings.Join(f.names(), ", "))
	}
	var build Builder
	for _, b := range f.scenarios {
		if b.reg.Name == name {
			build = b.build
			continue
		}
		if len(given(b)) == 0 {
			continue
		}
		list := flagList(b.flags)
		if name == "" {
			return "", nil, fmt.Errorf("%s %s --scenario %s", list, plural(b.flags, "needs", "need"), b.reg.Name)
		}
		return "", nil, fmt.Errorf("%s %s --scenario %s, not %s", list, plural(b.flags, "is an option of", "are options of"), b.reg.Name, name)
	}
	return name, build, nil
}

func (f *Flags) names() []string {
	out := make([]string, len(f.scenarios))
	for i, b := range f.scenarios {
		out[i] = b.reg.Name
	}
	return out
}

// flagList renders flags as "--a", "--a and --b", "--a, --b and --c".
func flagList(flags []string) string {
	d := make([]string, len(flags))
	for i, f := range flags {
		d[i] = "--" + f
	}
	if len(d) <= 1 {
		return strings.Join(d, "")
	}
	return strings.Join(d[:len(d)-1], ", ") + " and " + d[len(d)-1]
}

func plural(flags []string, one, many string) string {
	if len(flags) == 1 {
		return one
	}
	return many
}
