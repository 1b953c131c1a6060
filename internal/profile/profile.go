package profile

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/google/pprof/profile"

	"github.com/cnibench/cnibench/internal"
)

// ErrNotSupported is wrapped by Probe and Start when this host cannot
// sample: no perf_event_open, a perf_event_paranoid setting that refuses
// system-wide sampling (EACCES/EPERM), no cpu-clock event (ENOENT), or
// kernel addresses hidden by kptr_restrict.
var ErrNotSupported = internal.ErrNotSupported

// DefaultFrequency is the sampling frequency per CPU when Options.Frequency
// is 0: 999 Hz, not 1000, so that sampling does not beat with 1 ms timers.
const DefaultFrequency = 999

// maxFrequency bounds Options.Frequency (the kernel's own bound,
// kernel.perf_event_max_sample_rate, is usually lower and is reported by
// perf_event_open as EINVAL).
const maxFrequency = 100000

// Options configures a sampling session.
type Options struct {
	// Frequency is the sampling frequency per CPU in Hz; 0 means
	// DefaultFrequency.
	Frequency int
	// CPUs are the CPUs sampled; nil means every online CPU.
	CPUs []int
	// Paused starts the session disabled: nothing is sampled until the
	// first Resume.
	Paused bool
	// Timestamps keeps each sample's wall-clock time, to
	// TimestampResolution, as the numeric label TimeLabel, so that Crop
	// can keep the samples of given windows (the samples of a stack are
	// then aggregated per TimestampResolution only).
	Timestamps bool
}

// frequency returns the effective frequency or an error naming the field.
func (o Options) frequency() (int, error) {
	switch {
	case o.Frequency == 0:
		return DefaultFrequency, nil
	case o.Frequency < 0 || o.Frequency > maxFrequency:
		return 0, fmt.Errorf("profile: Options.Frequency %d out of range: use 1..%d Hz or 0 for %d", o.Frequency, maxFrequency, DefaultFrequency)
	}
	return o.Frequency, nil
}

// Profile is the result of a session (or of merged sessions).
type Profile struct {
	// P is the symbolised pprof profile.
	P *profile.Profile
	// Samples is the number of samples in P.
	Samples int
	// Lost is the number of samples the kernel dropped because a ring
	// buffer was full (PERF_RECORD_LOST).
	Lost uint64
	// Frequency is the sampling frequency per CPU in Hz.
	Frequency int
	// CPUs is the number of CPUs sampled.
	CPUs int
	// Window is the time sampling was enabled (the kernel's
	// time_enabled of the events), summed over merged profiles.
	Window time.Duration
	// ReaderCPU is the CPU time (user + system) of the thread that drained
	// the rings and read /proc, summed over merged profiles: the sampler's
	// own cost besides the kernel's per-sample work, which is charged to
	// the interrupted tasks.
	ReaderCPU time.Duration
	// Windows is the number of sampling windows (Start unpaused and every
	// Resume after a Pause), summed over merged profiles.
	Windows int
}

// Write writes the profile as gzipped pprof protobuf (what
// `go tool pprof` reads).
func (p *Profile) Write(w io.Writer) error {
	if p == nil || p.P == nil {
		return errors.New("profile: write: empty profile")
	}
	p.setMeta()
	if err := p.P.Write(w); err != nil {
		return fmt.Errorf("profile: write pprof: %w", err)
	}
	return nil
}

// Merge merges profiles taken at the same frequency: sample counts and CPU
// time are summed per stack and labels, Lost and Window are summed, CPUs is
// the largest. Nil profiles are ignored; with none left Merge fails.
func Merge(ps ...*Profile) (*Profile, error) {
	var srcs []*profile.Profile
	out := &Profile{}
	for i, p := range ps {
		if p == nil || p.P == nil {
			continue
		}
		if out.Frequency != 0 && p.Frequency != out.Frequency {
			return nil, fmt.Errorf("profile: merge: profile %d sampled at %d Hz, the first at %d Hz: merge only profiles of the same Options.Frequency", i, p.Frequency, out.Frequency)
		}
		out.Frequency = p.Frequency
		out.Samples += p.Samples
		out.Lost += p.Lost
		out.Window += p.Window
		out.ReaderCPU += p.ReaderCPU
		out.Windows += p.Windows
		out.CPUs = max(out.CPUs, p.CPUs)
		srcs = append(srcs, p.P)
	}
	if len(srcs) == 0 {
		return nil, errors.New("profile: merge: no profiles")
	}
	m, err := profile.Merge(srcs)
	if err != nil {
		return nil, fmt.Errorf("profile: merge: %w", err)
	}
	m.Comments = []string{out.meta()}
	out.P = m
	return out, nil
}
