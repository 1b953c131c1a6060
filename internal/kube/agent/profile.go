package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/pprof/profile"

	cpuprof "github.com/cnibench/cnibench/internal/profile"
)

// SchemaProfile is the schema of `agent profile`'s result.
const SchemaProfile = "cnibench/agent/profile/v1"

// Why a profile ended (Profile.Stopped).
const (
	ProfileStoppedDuration = "duration" // its --duration elapsed
	ProfileStoppedStdin    = "stdin"    // the caller closed its stdin
	ProfileStoppedSignal   = "signal"   // SIGTERM or SIGINT
)

// Profile is a node's system-wide CPU profile (`agent profile`, run in a
// privileged host pod), or, with Probe, only whether one can be taken.
type Profile struct {
	Schema string `json:"schema"`
	// Probe is set when only perf_event_open was tried (--probe): Error
	// empty means the node can be sampled from this pod.
	Probe bool `json:"probe,omitempty"`
	// Hz is the sampling frequency per CPU, CPUs the CPUs sampled.
	Hz   int `json:"hz,omitempty"`
	CPUs int `json:"cpus,omitempty"`
	// Samples were taken, Lost dropped by the kernel (full rings).
	Samples int    `json:"samples,omitempty"`
	Lost    uint64 `json:"lost,omitempty"`
	// Start is when sampling started (UTC), WindowNS how long it ran,
	// ReaderCPUNS the sampler's own CPU time.
	Start       time.Time `json:"start,omitzero"`
	WindowNS    int64     `json:"window_ns,omitempty"`
	ReaderCPUNS int64     `json:"reader_cpu_ns,omitempty"`
	// Stopped says what ended sampling (ProfileStopped*).
	Stopped string `json:"stopped,omitempty"`
	// PprofGz is the gzipped pprof profile (base64 in the JSON), every
	// sample with its wall-clock time as the numeric label
	// internal/profile.TimeLabel, for the caller to crop to its windows.
	PprofGz []byte `json:"pprof_gz,omitempty"`
	// Error says why no profile could be taken (a probe's answer).
	Error string `json:"error,omitempty"`
}

// ProbeProfile answers whether this pod can sample every CPU of its node
// (internal/profile.Probe: perf_event_open system-wide and kernel symbols
// visible); the reason is in Error otherwise.
func ProbeProfile() Profile {
	p := Profile{Schema: SchemaProfile, Probe: true}
	if err := cpuprof.Probe(); err != nil {
		p.Error = err.Error()
	}
	return p
}

// ProfileOptions configure RunProfile.
type ProfileOptions struct {
	// Hz is the sampling frequency per CPU (0: the package's default).
	Hz int
	// Duration bounds the sampling.
	Duration time.Duration
	// Stop, when closed, ends the sampling early (the caller's stdin
	// ended).
	Stop <-chan struct{}
	// Ready is called once sampling runs.
	Ready func()
}

// RunProfile samples every CPU with timestamps until o.Duration elapses,
// o.Stop is closed or ctx ends, and returns the profile. Its error (also
// in Error) says why no profile could be taken.
func RunProfile(ctx context.Context, o ProfileOptions) (Profile, error) {
	rep := Profile{Schema: SchemaProfile}
	fail := func(err error) (Profile, error) {
		rep.Error = err.Error()
		return rep, err
	}
	if o.Duration <= 0 {
		return fail(errors.New("agent profile: no duration"))
	}
	s, err := cpuprof.Start(cpuprof.Options{Frequency: o.Hz, Timestamps: true})
	if err != nil {
		return fail(err)
	}
	rep.Start = time.Now().UTC()
	if o.Ready != nil {
		o.Ready()
	}
	t := time.NewTimer(o.Duration)
	defer t.Stop()
	select {
	case <-t.C:
		rep.Stopped = ProfileStoppedDuration
	case <-o.Stop:
		rep.Stopped = ProfileStoppedStdin
	case <-ctx.Done():
		rep.Stopped = ProfileStoppedSignal
	}
	p, err := s.Stop()
	if err != nil {
		return fail(err)
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		return fail(err)
	}
	rep.Hz, rep.CPUs, rep.Samples, rep.Lost = p.Frequency, p.CPUs, p.Samples, p.Lost
	rep.WindowNS, rep.ReaderCPUNS = int64(p.Window), int64(p.ReaderCPU)
	rep.PprofGz = buf.Bytes()
	return rep, nil
}

// Decode returns the profile the result carries, its header from the
// result's fields.
func (r Profile) Decode() (*cpuprof.Profile, error) {
	if r.Error != "" {
		return nil, fmt.Errorf("agent profile: %s", r.Error)
	}
	if len(r.PprofGz) == 0 {
		return nil, errors.New("agent profile: the result carries no profile")
	}
	pp, err := profile.ParseData(r.PprofGz)
	if err != nil {
		return nil, fmt.Errorf("agent profile: decode its pprof: %w", err)
	}
	return &cpuprof.Profile{P: pp, Samples: r.Samples, Lost: r.Lost, Frequency: r.Hz, CPUs: r.CPUs,
		Window: time.Duration(r.WindowNS), ReaderCPU: time.Duration(r.ReaderCPUNS), Windows: 1}, nil
}
