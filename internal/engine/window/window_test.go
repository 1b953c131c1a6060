package window

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/hoststat"
	"github.com/cnibench/cnibench/internal/hostinfo"
	"github.com/cnibench/cnibench/pkg/result"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// edges returns client edges 10 s apart with readable CPU and host stats:
// the host is 2 cores, busyTicks of 2000 ticks busy (a tick is 10 ms), all
// of it the run's own cgroup's.
func edges(busyTicks uint64) (ClientEdge, ClientEdge) {
	e0 := ClientEdge{At: t0, CPU: hoststat.ProcCPU{User: time.Second, MaxRSS: 1 << 20}, Host: hoststat.ProcStat{CPUs: 2},
		Cg: hostinfo.CgroupCPU{ID: 7, Usage: time.Minute}}
	e1 := ClientEdge{At: t0.Add(10 * time.Second), CPU: hoststat.ProcCPU{User: 3 * time.Second, MaxRSS: 1 << 20},
		Host: hoststat.ProcStat{User: busyTicks, Idle: 2000 - busyTicks, CPUs: 2},
		Cg:   hostinfo.CgroupCPU{ID: 7, Usage: time.Minute + time.Duration(busyTicks)*10*time.Millisecond}}
	return e0, e1
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func hasWarning(o Out, sub string) bool {
	for _, w := range o.Warnings {
		if strings.Contains(w, sub) {
			return true
		}
	}
	return false
}

func TestWindowMetrics(t *testing.T) {
	type want map[string]float64
	tests := []struct {
		name    string
		in      func() In
		want    want
		absent  []string
		warning string
	}{{
		// The headline of udp_stream is what arrived, not what was sent;
		// loss is exact (sent − unique received), CPU per 100 Gbit divides
		// by bits received.
		name: "udp_stream headline is receiver goodput",
		in: func() In {
			e0, e1 := edges(1000) // 1 of 2 cores busy: 100 %
			e1.Cnt.Trans = 1000
			return In{Test: engine.UDPStream, E0: e0, E1: e1, UDPSent: 1000, UDPSentBytes: 1000 * 1000, BootID: "h",
				Srv: engine.SrvStats{WallMicros: 10e6, BootID: "h", UDPRecv: &engine.UDPRecv{Received: 900, Bytes: 900 * 1000, Duplicates: 3, Reordered: 7, Settled: true}, IPFrag: &hoststat.IPFrag{}}}
		},
		want: want{
			result.ThroughputBitsPerSec:   900 * 1000 * 8 / 10.0,
			result.ThroughputRxBitsPerSec: 900 * 1000 * 8 / 10.0,
			result.ThroughputTxBitsPerSec: 1000 * 1000 * 8 / 10.0,
			result.DatagramsSent:          1000,
			result.DatagramsReceived:      900,
			result.DatagramsLost:          100,
			result.LossPct:                10,
			result.DatagramsDuplicated:    3,
			result.DatagramsReordered:     7,
			result.HostCPUPct:             100,
			result.CPUPctPer100Gbit:       100 * 100e9 / (900 * 1000 * 8 / 10.0),
			"server_ip_frag_creates":      0,
		},
	}, {
		name: "udp_stream counters not settled warns",
		in: func() In {
			e0, e1 := edges(0)
			return In{Test: engine.UDPStream, E0: e0, E1: e1, UDPSent: 10, UDPSentBytes: 10,
				Srv: engine.SrvStats{WallMicros: 10e6, UDPRecv: &engine.UDPRecv{Received: 10, Bytes: 10, DrainMillis: 2000}}}
		},
		want:    want{result.LossPct: 0},
		warning: "still moving",
	}, {
		name: "more received than sent is not a negative loss",
		in: func() In {
			e0, e1 := edges(0)
			return In{Test: engine.UDPStream, E0: e0, E1: e1, UDPSent: 10, UDPSentBytes: 10,
				Srv: engine.SrvStats{WallMicros: 10e6, UDPRecv: &engine.UDPRecv{Received: 11, Bytes: 11, Settled: true}}}
		},
		absent:  []string{result.LossPct, result.DatagramsLost},
		warning: "loss not measured",
	}, {
		name: "fragments are recorded and warned about",
		in: func() In {
			e0, e1 := edges(0)
			e1.Frag = hoststat.IPFrag{FragCreates: 3000, FragOKs: 1000}
			return In{Test: engine.UDPStream, E0: e0, E1: e1, UDPSent: 1000, UDPSentBytes: 1000,
				Srv: engine.SrvStats{WallMicros: 10e6, UDPRecv: &engine.UDPRecv{Received: 1000, Bytes: 1000, Settled: true},
					IPFrag: &hoststat.IPFrag{ReasmReqds: 3000, ReasmOKs: 1000}}}
		},
		want:    want{"client_ip_frag_creates": 3000, "client_ip_frag_oks": 1000, "server_ip_reasm_reqds": 3000, "server_ip_reasm_oks": 1000},
		warning: "created IP fragments",
	}, {
		// Errors are never zeros: unreadable getrusage and /proc/stat
		// leave the CPU metrics out, with a warning.
		name: "unreadable CPU is absent, not zero",
		in: func() In {
			e0, e1 := edges(1000)
			e1.Cnt.Trans = 100
			e0.CPUErr = errors.New("getrusage: EPERM")
			e1.HostErr = errors.New("open /proc/stat: no such file")
			return In{Test: engine.TCPRR, E0: e0, E1: e1, Srv: engine.SrvStats{WallMicros: 10e6, CPUError: "getrusage: EPERM", HostError: "open /proc/stat: denied", BootID: "b"}, BootID: "a"}
		},
		want:    want{result.TransPerSec: 10},
		absent:  []string{result.ClientCPUPct, result.ServerCPUPct, result.HostCPUPct, result.CPUUsPerTrans, result.ClientRSSBytes, result.RemoteHostCPUPct},
		warning: "client CPU not measured",
	}, {
		name: "unreadable TCP_INFO leaves retransmits out",
		in: func() In {
			e0, e1 := edges(0)
			e1.Cnt.TxBytes = 1000
			unread := TCPEdge{Flows: []TCPInfo{{FD: -1}}, Unread: 1, Err: errors.New("getsockopt TCP_INFO: EBADF")}
			e0.TCP, e1.TCP = unread, unread
			return In{Test: engine.TCPStream, E0: e0, E1: e1, Srv: engine.SrvStats{WallMicros: 10e6, RxBytes: 1000}}
		},
		absent:  []string{result.TCPRetransmits, result.TCPSRTTUsMedian},
		warning: "TCP_INFO could not be read on 2 client socket(s)",
	}, {
		// A server on another host: its CPU is reported as remote and
		// counted in the cost per transaction.
		name: "remote host CPU counted when hosts differ",
		in: func() In {
			e0, e1 := edges(1000) // local: 1 core busy over 10 s = 10 core-seconds
			e1.Cnt.Trans = 1000
			return In{Test: engine.TCPRR, E0: e0, E1: e1, BootID: "client",
				Srv: engine.SrvStats{WallMicros: 10e6, BootID: "server", HostStat: &hoststat.ProcStat{System: 500, Idle: 1500, CPUs: 2},
					Cgroup: &hoststat.CgroupStat{ID: 7, UsageMicros: 5e6}}}
		},
		want: want{result.HostCPUPct: 100, result.RemoteHostCPUPct: 50, result.RemoteHostCPUSysPct: 50,
			result.CPUUsPerTrans: (10 + 5) * 1e6 / 1000, result.ForeignCPUPct: 0, result.RemoteForeignCPUPct: 0},
	}, {
		name: "same host: remote not reported nor counted twice",
		in: func() In {
			e0, e1 := edges(1000)
			e1.Cnt.Trans = 1000
			return In{Test: engine.TCPRR, E0: e0, E1: e1, BootID: "one",
				Srv: engine.SrvStats{WallMicros: 10e6, BootID: "one", HostStat: &hoststat.ProcStat{System: 1000, Idle: 1000, CPUs: 2}}}
		},
		want:   want{result.HostCPUPct: 100, result.CPUUsPerTrans: 10 * 1e6 / 1000},
		absent: []string{result.RemoteHostCPUPct, result.RemoteForeignCPUPct},
	}, {
		// A hog of half a core beside the run: 5 of the host's 10 busy
		// core-seconds are not the run's cgroup's. They are reported, and
		// the cost per transaction counts only the run's.
		name: "other programs' CPU is foreign and not in the cost",
		in: func() In {
			e0, e1 := edges(1000)
			e1.Cg.Usage -= 5 * time.Second
			e1.Cnt.Trans = 1000
			return In{Test: engine.TCPRR, E0: e0, E1: e1, BootID: "one",
				Srv: engine.SrvStats{WallMicros: 10e6, BootID: "one", Cgroup: &hoststat.CgroupStat{ID: 7, UsageMicros: 5e6}}}
		},
		want: want{result.HostCPUPct: 100, result.ForeignCPUPct: 50, result.StealPct: 0, result.RunCPUPct: 50,
			result.CPUUsPerTrans: 5 * 1e6 / 1000},
	}, {
		// Steal is CPU the hypervisor gave away: neither the run's nor
		// another program's on this host.
		name: "steal is reported apart and not in the cost",
		in: func() In {
			e0, e1 := edges(800)
			e1.Host.Steal, e1.Host.Idle = 200, 1000
			e1.Cnt.Trans = 1000
			return In{Test: engine.TCPRR, E0: e0, E1: e1, BootID: "one", Srv: engine.SrvStats{WallMicros: 10e6, BootID: "one"}}
		},
		want: want{result.HostCPUPct: 100, result.StealPct: 20, result.ForeignCPUPct: 0, result.RunCPUPct: 80,
			result.CPUUsPerTrans: 8 * 1e6 / 1000},
	}, {
		// Two pods on one node: each end's container is its own cgroup,
		// and both are the run's.
		name: "a server in another cgroup on the same host is the run's too",
		in: func() In {
			e0, e1 := edges(1000)
			e1.Cg.Usage -= 4 * time.Second
			return In{Test: engine.TCPRR, E0: e0, E1: e1, BootID: "one",
				Srv: engine.SrvStats{WallMicros: 10e6, BootID: "one", Cgroup: &hoststat.CgroupStat{ID: 8, UsageMicros: 3e6}}}
		},
		want: want{result.ForeignCPUPct: 10, result.RunCPUPct: 90},
	}, {
		// Without a readable cgroup the client's and server's processes
		// stand for the run: other helpers count as foreign, and it says so.
		name: "unreadable cgroup falls back to the processes",
		in: func() In {
			e0, e1 := edges(1000) // client process: 2 s of CPU
			e0.CgErr = errors.New("no cgroup v2 hierarchy mounted")
			return In{Test: engine.TCPRR, E0: e0, E1: e1, BootID: "one",
				Srv: engine.SrvStats{WallMicros: 10e6, BootID: "one", CPUUserMicro: 3e6, CgroupError: "not measured"}}
		},
		want:    want{result.ForeignCPUPct: 50, result.RunCPUPct: 50},
		warning: "foreign_cpu_pct: the client's cgroup could not be read",
	}, {
		name: "latency only when measured",
		in: func() In {
			e0, e1 := edges(0)
			e1.Cnt.Trans = 10
			return In{Test: engine.TCPCRR, E0: e0, E1: e1, Srv: engine.SrvStats{WallMicros: 10e6},
				Lat: Percentiles{Count: 10, P50: 12, P99: 30}}
		},
		want:   want{result.LatencyUsP50: 12, result.LatencyUsP99: 30},
		absent: []string{result.ConnectUsP50},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Metrics(tt.in())
			for k, v := range tt.want {
				got, ok := o.Metrics[k]
				if !ok {
					t.Errorf("%s missing", k)
				} else if !near(got, v) {
					t.Errorf("%s = %v, want %v", k, got, v)
				}
			}
			for _, k := range tt.absent {
				if v, ok := o.Metrics[k]; ok {
					t.Errorf("%s = %v, want absent", k, v)
				}
			}
			if tt.warning != "" && !hasWarning(o, tt.warning) {
				t.Errorf("no warning containing %q in %q", tt.warning, o.Warnings)
			}
		})
	}
}

func TestSrvStatsOver(t *testing.T) {
	e0 := SrvEdge{At: t0, CPU: hoststat.ProcCPU{User: time.Second}, Host: hoststat.ProcStat{User: 10, CPUs: 1}, Frag: hoststat.IPFrag{ReasmOKs: 5}}
	e1 := SrvEdge{At: t0.Add(2 * time.Second), CPU: hoststat.ProcCPU{User: 2 * time.Second}, Host: hoststat.ProcStat{User: 30, CPUs: 1}, Frag: hoststat.IPFrag{ReasmOKs: 9}}
	st := SrvStatsOver(e0, e1, 1)
	if st.WallMicros != 2e6 || st.CPUUserMicro != 1e6 || st.HostStat == nil || st.HostStat.User != 20 || st.IPFrag == nil || st.IPFrag.ReasmOKs != 4 {
		t.Fatalf("stats %+v", st)
	}
	e1.CPUErr, e1.HostErr, e1.FragErr = errors.New("no rusage"), errors.New("no stat"), errors.New("no snmp")
	st = SrvStatsOver(e0, e1, 1)
	if st.CPUUserMicro != 0 || st.CPUError == "" || st.HostStat != nil || st.HostError == "" || st.IPFrag != nil || st.IPFragError == "" {
		t.Fatalf("unreadable figures must be absent with a reason: %+v", st)
	}
}
