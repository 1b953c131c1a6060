package profile

import (
	"strings"
	"time"

	"github.com/google/pprof/profile"
)

// KernelMapping is the file name of the mapping every kernel location
// (BPF programs included) belongs to, as in perf.
const KernelMapping = "[kernel.kallsyms]"

// CommPrefix starts the function name of the root frame of every sample:
// "comm:<process name>", so that a flame graph splits by process.
const CommPrefix = "comm:"

// unknownFunc names an address no symbol covers: "[unknown] <mapping>".
func unknownFunc(where string) string { return "[unknown] " + where }

// buildInfo is what a profile's header says besides the stacks.
type buildInfo struct {
	start     time.Time
	window    time.Duration
	frequency int
	cpus      int
	windows   int
}

// builder assembles a pprof profile, deduplicating mappings, locations
// and functions.
type builder struct {
	p        *profile.Profile
	kernel   *profile.Mapping
	mappings map[mapping]*profile.Mapping
	locs     map[locKey]*profile.Location
	funcs    map[kernelFunc]*profile.Function
	comms    map[string]*profile.Location
	elfs     map[fileKey]*elfSymbols
	files    map[fileKey]fileReader
}

// symbols returns the symbols of a mapped file, read on first use (only
// the files a sample's frame is in are read); nil if it could not be.
func (b *builder) symbols(k fileKey) *elfSymbols {
	if es, ok := b.elfs[k]; ok {
		return es
	}
	var es *elfSymbols
	if f := b.files[k]; f != nil {
		es = cachedSymbols(k, f)
	}
	b.elfs[k] = es
	return es
}

type locKey struct {
	m    *profile.Mapping
	addr uint64
}

// build symbolises the collected stacks: kernel addresses through the
// kallsyms tables in order (the first that resolves wins: give the newest
// first, an older one still names BPF programs unloaded since), user
// addresses through the ELF files the collector opened.
func (c *collector) build(info buildInfo, ks ...*kallsyms) *profile.Profile {
	period := int64(time.Second) / int64(info.frequency)
	b := &builder{
		p: &profile.Profile{
			SampleType: []*profile.ValueType{
				{Type: "samples", Unit: "count"},
				{Type: "cpu", Unit: "nanoseconds"},
			},
			PeriodType:        &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
			Period:            period,
			TimeNanos:         info.start.UnixNano(),
			DurationNanos:     int64(info.window),
			Comments:          []string{(&Profile{Frequency: info.frequency, CPUs: info.cpus, Lost: c.lost, Windows: info.windows}).meta()},
			DefaultSampleType: "cpu",
		},
		mappings: map[mapping]*profile.Mapping{},
		locs:     map[locKey]*profile.Location{},
		funcs:    map[kernelFunc]*profile.Function{},
		comms:    map[string]*profile.Location{},
		elfs:     map[fileKey]*elfSymbols{},
	}
	lo, hi := uint64(0), uint64(0)
	for _, k := range ks {
		l, h := k.span()
		if l != 0 && (lo == 0 || l < lo) {
			lo = l
		}
		hi = max(hi, h)
	}
	b.kernel = &profile.Mapping{ID: 1, Start: lo, Limit: hi + maxKsymSize, File: KernelMapping, HasFunctions: true}
	b.p.Mapping = append(b.p.Mapping, b.kernel)
	b.files = c.files
	for _, a := range c.order {
		s := &profile.Sample{
			Value:    []int64{a.count, a.period},
			Label:    map[string][]string{"comm": {a.comm}},
			NumLabel: map[string][]int64{"pid": {int64(a.pid)}, "cpu": {int64(a.cpu)}},
		}
		if a.time != 0 {
			s.NumLabel[TimeLabel] = []int64{a.time}
			s.NumUnit = map[string][]string{TimeLabel: {"nanoseconds"}}
		}
		for i, f := range a.frames {
			lookup := f.addr
			if !f.exact && lookup > 0 {
				lookup--
			}
			if f.kernel {
				s.Location = append(s.Location, b.kernelLoc(f.addr, lookup, ks))
			} else {
				s.Location = append(s.Location, b.userLoc(a.maps[i], f.addr, lookup))
			}
		}
		s.Location = append(s.Location, b.commLoc(a.comm))
		b.p.Sample = append(b.p.Sample, s)
	}
	return b.p
}

func (b *builder) function(kf kernelFunc) *profile.Function {
	if f, ok := b.funcs[kf]; ok {
		return f
	}
	f := &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: kf.name, SystemName: kf.system, Filename: kf.file}
	b.funcs[kf] = f
	b.p.Function = append(b.p.Function, f)
	return f
}

func (b *builder) location(m *profile.Mapping, addr uint64, kf kernelFunc) *profile.Location {
	k := locKey{m, addr}
	if l, ok := b.locs[k]; ok {
		return l
	}
	l := &profile.Location{ID: uint64(len(b.p.Location) + 1), Mapping: m, Address: addr,
		Line: []profile.Line{{Function: b.function(kf)}}}
	b.locs[k] = l
	b.p.Location = append(b.p.Location, l)
	return l
}

func (b *builder) kernelLoc(addr, lookup uint64, ks []*kallsyms) *profile.Location {
	if l, ok := b.locs[locKey{b.kernel, addr}]; ok {
		return l
	}
	kf := kernelFunc{name: unknownFunc(KernelMapping), system: unknownFunc(KernelMapping), file: KernelMapping}
	for _, k := range ks {
		if s, ok := k.lookup(lookup); ok {
			kf = funcOf(s)
			break
		}
	}
	return b.location(b.kernel, addr, kf)
}

func (b *builder) userLoc(m *mapping, addr, lookup uint64) *profile.Location {
	var pm *profile.Mapping
	if m != nil {
		pm = b.mapping(m)
	}
	if l, ok := b.locs[locKey{pm, addr}]; ok {
		return l
	}
	name := unknownFunc(m.base())
	if m != nil && m.fileBacked() {
		if n, ok := b.symbols(m.key()).lookup(m, lookup); ok {
			name = n
		}
	}
	file := ""
	if m != nil {
		file = m.path
	}
	return b.location(pm, addr, kernelFunc{name: name, system: name, file: file})
}

func (b *builder) mapping(m *mapping) *profile.Mapping {
	k := mapping{start: m.start, limit: m.limit, offset: m.offset, path: m.path}
	if pm, ok := b.mappings[k]; ok {
		return pm
	}
	pm := &profile.Mapping{ID: uint64(len(b.p.Mapping) + 1), Start: m.start, Limit: m.limit, Offset: m.offset,
		File: m.path, HasFunctions: m.fileBacked() && b.symbols(m.key()) != nil}
	b.mappings[k] = pm
	b.p.Mapping = append(b.p.Mapping, pm)
	return pm
}

func (b *builder) commLoc(comm string) *profile.Location {
	if l, ok := b.comms[comm]; ok {
		return l
	}
	name := CommPrefix + comm
	l := &profile.Location{ID: uint64(len(b.p.Location) + 1),
		Line: []profile.Line{{Function: b.function(kernelFunc{name: name, system: name})}}}
	b.comms[comm] = l
	b.p.Location = append(b.p.Location, l)
	return l
}

// isComm reports whether a location is a sample's comm root frame and
// returns the comm.
func isComm(l *profile.Location) (string, bool) {
	if len(l.Line) == 0 || l.Line[0].Function == nil {
		return "", false
	}
	return strings.CutPrefix(l.Line[0].Function.Name, CommPrefix)
}
