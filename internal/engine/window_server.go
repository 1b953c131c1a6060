package engine

import (
	"errors"
	"github.com/cnibench/cnibench/internal/engine/hoststat"
	"time"

	"github.com/cnibench/cnibench/internal/hostinfo"
	"github.com/cnibench/cnibench/internal/procfs"
)

// errCgroupChanged: the server moved to another cgroup mid-window.
var errCgroupChanged = errors.New("the cgroup changed during the window")

// srvEdge is what the server reads at one edge of a measured window.
type srvEdge struct {
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
	Cnt     srvCounters
}

func readSrvEdge(dp dataPlane) srvEdge {
	e := srvEdge{At: time.Now()}
	e.CPU, e.CPUErr = hoststat.ReadProcCPU()
	e.Host, e.HostErr = hoststat.ReadProcStat()
	e.Cg, e.CgErr = hoststat.ReadOwnCgroup()
	e.Others = hoststat.ReadOthers()
	e.Frag, e.FragErr = hoststat.ReadIPFrag()
	e.Cnt = dp.Counters()
	return e
}

// srvWindow is a session's open measured window.
type srvWindow struct {
	open  bool
	e0    srvEdge
	peakN int64
}

// start opens the window.
func (w *srvWindow) start(dp dataPlane, sessions int64) {
	w.open, w.e0, w.peakN = true, readSrvEdge(dp), sessions
}

// udpDrainBound bounds how long the server waits for udp_stream's queues to
// drain after the client stopped sending.
const udpDrainBound = 2 * time.Second

// stop closes the window and returns the server's stats over it. A
// udp_stream data plane first drains its queues (until its counters settle).
func (w *srvWindow) stop(dp dataPlane, sessions int64) *SrvStats {
	recv := drainUDPStream(dp, udpDrainBound)
	e1 := readSrvEdge(dp)
	if sessions > w.peakN {
		w.peakN = sessions
	}
	w.open = false
	st := srvStatsOver(w.e0, e1, int(w.peakN))
	st.BootID = hoststat.ReadBootID()
	st.UDPRecv = recv
	return st
}

// srvStatsOver computes the server's stats from its two window edges; a
// figure that could not be read is left out with the reason.
func srvStatsOver(e0, e1 srvEdge, sessions int) *SrvStats {
	st := &SrvStats{
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
	if e0.Others.Read && e1.Others.Read {
		var us int64
		if e1.Others.Ticks > e0.Others.Ticks {
			us = procfs.Duration(e1.Others.Ticks - e0.Others.Ticks).Microseconds()
		}
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
