package server

import (
	"time"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/hoststat"
	"github.com/cnibench/cnibench/internal/engine/window"
)

func readSrvEdge(dp dataPlane) window.SrvEdge {
	e := window.SrvEdge{At: time.Now()}
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
	e0    window.SrvEdge
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
func (w *srvWindow) stop(dp dataPlane, sessions int64) *engine.SrvStats {
	recv := drainUDPStream(dp, udpDrainBound)
	e1 := readSrvEdge(dp)
	if sessions > w.peakN {
		w.peakN = sessions
	}
	w.open = false
	st := window.SrvStatsOver(w.e0, e1, int(w.peakN))
	st.BootID = hoststat.ReadBootID()
	st.UDPRecv = recv
	return st
}
