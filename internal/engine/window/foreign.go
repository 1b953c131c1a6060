package window

import (
	"time"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/hoststat"
	"github.com/cnibench/cnibench/pkg/result"
)

// Interference: the run's own CPU taken out of its hosts' (how other
// programs' CPU and steal are counted: hoststat's foreign.go and
// docs/interference.md).

// foreignMetrics records the client host's and (when it is another) the
// server host's foreign CPU and steal. ownClient is the client's cgroup
// CPU over the window (nil: not readable, then the client process's CPU
// stands for it); on a shared host the server's cgroup is added unless it
// is the same cgroup.
func foreignMetrics(o *Out, in In, same bool) {
	m := o.Metrics
	window := in.E1.At.Sub(in.E0.At)
	srv := in.Srv
	if firstErr(in.E0.HostErr, in.E1.HostErr) == nil {
		own, why := clientOwn(in)
		// srvOwn is the server's CPU when it runs on this host outside
		// the client's cgroup: the process count includes it.
		var srvOwn time.Duration
		if same && !in.External {
			s, sWhy := serverOwn(srv)
			if srv.Cgroup == nil || own.cg == nil || srv.Cgroup.ID != own.cg.ID {
				own.d += s
				srvOwn = s
			}
			if why == "" {
				why = sWhy
			}
		}
		if f, st, ok := hoststat.ForeignOver(in.E1.Host.Sub(in.E0.Host), window, own.d); ok {
			if p, ok := hoststat.OthersOver(in.E0.Others, in.E1.Others, window, srvOwn); ok {
				f = p
			} else if why != "" {
				o.warn("foreign_cpu_pct: %s cgroup could not be read, so its process stands for the run's own CPU there (any other process of the run counts as another program's)", why)
			}
			m[result.ForeignCPUPct], m[result.StealPct] = f, st
		}
	}
	if in.External || same || srv.HostStat == nil || srv.WallMicros <= 0 {
		return
	}
	s, _ := serverOwn(srv)
	wall := time.Duration(srv.WallMicros) * time.Microsecond
	if f, st, ok := hoststat.ForeignOver(*srv.HostStat, wall, s); ok {
		if srv.OthersMicros != nil && *srv.OthersMicros >= 0 {
			f = 100 * float64(*srv.OthersMicros) / float64(srv.WallMicros)
		}
		m[result.RemoteForeignCPUPct], m[result.RemoteStealPct] = f, st
	}
}

type ownCPU struct {
	d  time.Duration
	cg *hoststat.CgroupStat
}

// clientOwn is the client's own CPU over the window: its cgroup's, or its
// process's with the reason the cgroup was not read.
func clientOwn(in In) (ownCPU, string) {
	if cg := hoststat.CgroupOver(in.E0.Cg, in.E1.Cg, in.E0.CgErr, in.E1.CgErr); cg != nil {
		return ownCPU{d: time.Duration(cg.UsageMicros) * time.Microsecond, cg: cg}, ""
	}
	var d time.Duration
	if firstErr(in.E0.CPUErr, in.E1.CPUErr) == nil {
		d = in.E1.CPU.User + in.E1.CPU.Sys - in.E0.CPU.User - in.E0.CPU.Sys
	}
	return ownCPU{d: d}, "the client's"
}

// serverOwn is the server's own CPU over its window: its cgroup's, or its
// process's.
func serverOwn(srv engine.SrvStats) (time.Duration, string) {
	if srv.Cgroup != nil {
		return time.Duration(srv.Cgroup.UsageMicros) * time.Microsecond, ""
	}
	return time.Duration(srv.CPUUserMicro+srv.CPUSysMicro) * time.Microsecond, "the server's"
}
