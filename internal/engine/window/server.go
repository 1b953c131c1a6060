package window

import (
	"errors"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/hoststat"
	"github.com/cnibench/cnibench/internal/hostinfo"
)

// errCgroupChanged: the server moved to another cgroup mid-window.
var errCgroupChanged = errors.New("the cgroup changed during the window")

// SrvEdge is what the server reads at one edge of a measured window.
type SrvEdge struct {
	At      time.Time
	CPU     hoststat.ProcCPU
	CPUErr  error
	Host    hoststat.ProcStat
	HostErr error
	Cg      hostinfo.CgroupCPU
	CgErr   error
	Others  hoststat.Others
	Frag    hoststat.IPFrag
	FragErr error
	Cnt     SrvCounters
}

// SrvStatsOver computes the server's stats from its two window edges; a
// figure that could not be read is left out with the reason.
func SrvStatsOver(e0, e1 SrvEdge, sessions int) *engine.SrvStats {
	st := &engine.SrvStats{
		WallMicros:  e1.At.Sub(e0.At).Microseconds(),
		RxBytes:     e1.Cnt.RxBytes - e0.Cnt.RxBytes,
		RxDatagrams: e1.Cnt.RxDatagrams - e0.Cnt.RxDatagrams,
		Trans:       e1.Cnt.Trans - e0.Cnt.Trans,
		Sessions:    sessions,
	}
	if err := firstErr(e0.CPUErr, e1.CPUErr); err != nil {
		st.CPUError = err.Error()
	} else {
		st.CPUUserMicro = (e1.CPU.User - e0.CPU.User).Microseconds()
		st.CPUSysMicro = (e1.CPU.Sys - e0.CPU.Sys).Microseconds()
	}
	if err := firstErr(e0.HostErr, e1.HostErr); err != nil {
		st.HostError = err.Error()
	} else {
		d := e1.Host.Sub(e0.Host)
		st.HostStat = &d
	}
	if used, ok := hoststat.OthersUsed(e0.Others, e1.Others); ok {
		us := used.Microseconds()
		st.OthersMicros = &us
	}
	if st.Cgroup = hoststat.CgroupOver(e0.Cg, e1.Cg, e0.CgErr, e1.CgErr); st.Cgroup == nil {
		st.CgroupError = "not measured: " + firstErr(e0.CgErr, e1.CgErr, errCgroupChanged).Error()
	}
	if err := firstErr(e0.FragErr, e1.FragErr); err != nil {
		st.IPFragError = err.Error()
	} else {
		d := e1.Frag.Sub(e0.Frag)
		st.IPFrag = &d
	}
	return st
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

type SrvCounters struct {
	RxBytes, RxDatagrams, Trans uint64
}
