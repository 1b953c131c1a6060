package runcmd

import (
	"fmt"
	"strconv"

	"github.com/cnibench/cnibench/internal/profile"
	"github.com/cnibench/cnibench/pkg/result"
)

// profileHook samples every CPU during each measured window
// (--cpu-profile): a session opens just before the window's first edge and
// pauses just after its last, so the control traffic around the window and
// the symbolisation stay outside; each window's CPU breakdown becomes its
// repeat's metrics, and the windows' profiles are merged into one file.
type profileHook struct {
	opts  profile.Options
	sess  *profile.Session
	err   error // the current window's, reported once in AddMetrics
	parts []*profile.Profile
}

func (h *profileHook) WindowOpen(int) {
	h.sess, h.err = profile.Start(h.opts)
}

func (h *profileHook) WindowClose(int) {
	if h.sess != nil {
		h.sess.Pause()
	}
}

// stop ends the current session, if any.
func (h *profileHook) stop() (*profile.Profile, error) {
	if h.sess == nil {
		return nil, h.err
	}
	s := h.sess
	h.sess = nil
	return s.Stop()
}

func (h *profileHook) AddMetrics(_ int, rep *result.Repeat, res *result.Result) {
	p, err := h.stop()
	if err != nil {
		addWarning(res, "cpu profile: "+err.Error())
		return
	}
	if rep.Metrics == nil {
		rep.Metrics = map[string]float64{}
	}
	for k, v := range profile.Breakdown(p.P).Metrics() {
		rep.Metrics[k] = v
	}
	rep.Metrics[profile.SamplesMetric] = float64(p.Samples)
	rep.Metrics[profile.LostMetric] = float64(p.Lost)
	rep.Metrics[profile.ReaderCPUMetric] = p.ReaderCPU.Seconds()
	if p.Lost > 0 {
		addWarning(res, fmt.Sprintf("cpu profile: %d sample(s) lost (the ring buffers overflowed); lower --cpu-profile-hz", p.Lost))
	}
	h.parts = append(h.parts, p)
}

// finish stops a session left open (an interrupted window) and writes the
// merged profile of the measured windows to path; no window, no file.
func (h *profileHook) finish(path string, res *result.Result) error {
	_, _ = h.stop()
	if len(h.parts) == 0 {
		return nil
	}
	m, err := profile.Merge(h.parts...)
	if err != nil {
		return fmt.Errorf("merge the windows' profiles: %w", err)
	}
	if err := m.WriteFile(path); err != nil {
		return err
	}
	if res.Config == nil {
		res.Config = map[string]string{}
	}
	res.Config["cpu_profile"] = path
	res.Config["cpu_profile_hz"] = strconv.Itoa(m.Frequency)
	return nil
}

// addWarning adds w to res's warnings once.
func addWarning(res *result.Result, w string) {
	for _, x := range res.Warnings {
		if x == w {
			return
		}
	}
	res.Warnings = append(res.Warnings, w)
}
