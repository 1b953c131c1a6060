package window

import (
	"fmt"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/hoststat"
	"github.com/cnibench/cnibench/internal/hostinfo"
	"github.com/cnibench/cnibench/pkg/result"
)

// Every metric of a repeat is computed here, by pure functions, from what
// both ends read at the two edges of the measured window; Client.repeat
// only runs the control sequence and collects the edges.

// ClientEdge is what the client reads at one edge of the window.
type ClientEdge struct {
	At      time.Time
	Cnt     Counters
	CPU     hoststat.ProcCPU
	CPUErr  error
	Host    hoststat.ProcStat
	HostErr error
	// Cg is the CPU of the client's cgroup (the run's, in the lab).
	Cg    hostinfo.CgroupCPU
	CgErr error
	// Others is other programs' CPU so far, counted process by process
	// (hoststat.Others).
	Others  hoststat.Others
	Frag    hoststat.IPFrag
	FragErr error
	// TCP is TCP_INFO of the flows' sockets (tcp_stream, tcp_rr).
	TCP TCPEdge
}

// In is one repeat's measurements.
type In struct {
	Test   string
	E0, E1 ClientEdge
	// UDPSent and UDPSentBytes are udp_stream's datagrams (and bytes)
	// stamped with the measured phase, counted after the senders stopped.
	UDPSent, UDPSentBytes uint64
	// Srv is the server's stats; External means there is no cnibench
	// server (an external HTTP server), so none.
	Srv      engine.SrvStats
	External bool
	// BootID is the client host's boot id (hoststat.ReadBootID).
	BootID    string
	Lat, Conn Percentiles
	// Load is tcp_rr_loaded's load over the same window (nil otherwise).
	Load *Load
}

// Out is a repeat's metrics, the run's warnings about them, and
// whether both ends share one host (nil when unknown).
type Out struct {
	Metrics  map[string]float64
	Warnings []string
	SameHost *bool
}

func (o *Out) warn(format string, a ...any) {
	o.Warnings = append(o.Warnings, fmt.Sprintf(format, a...))
}

// Metrics computes every metric of one window.
func Metrics(in In) Out {
	o := Out{Metrics: map[string]float64{}}
	m := o.Metrics
	sec := in.E1.At.Sub(in.E0.At).Seconds()
	if sec <= 0 {
		o.warn("the measured window has no length: no metric computed")
		return o
	}
	trans := in.E1.Cnt.Trans - in.E0.Cnt.Trans
	tx := in.E1.Cnt.TxBytes - in.E0.Cnt.TxBytes
	m[result.TransPerSec] = float64(trans) / sec
	m[result.Errors] = float64(in.E1.Cnt.Errors - in.E0.Cnt.Errors)
	switch in.Test {
	case engine.TCPStream:
		tcpStreamMetrics(&o, in, tx, sec)
	case engine.UDPStream:
		udpStreamMetrics(&o, in, sec)
	case engine.HTTP:
		m[result.ThroughputBitsPerSec] = float64(tx) * 8 / sec
	case engine.ICMPEcho:
		icmpMetrics(&o, in)
	}
	if in.Test == engine.TCPStream || in.Test == engine.TCPRR || in.Test == engine.TCPRRLoaded {
		tcpInfoMetrics(&o, in.E0.TCP, in.E1.TCP)
	}
	if in.Load != nil {
		loadMetrics(&o, *in.Load)
	}
	if in.Test == engine.UDPStream || in.Test == engine.UDPRR || in.Test == engine.ICMPEcho {
		fragMetrics(&o, in)
	}
	if !engine.IsStream(in.Test) {
		latencyMetrics(m, in.Lat, in.Conn)
	}
	units := float64(trans)
	if engine.IsStream(in.Test) {
		units = m[result.ThroughputBitsPerSec]
	}
	cpuMetrics(&o, in, sec, units)
	if in.Test == engine.TCPRRLoaded {
		// The hosts' busy CPU is mostly the load's: per rr transaction it
		// would mislead.
		delete(m, result.CPUUsPerTrans)
	}
	return o
}

func tcpStreamMetrics(o *Out, in In, tx uint64, sec float64) {
	m := o.Metrics
	m[result.ThroughputBitsPerSec] = float64(tx) * 8 / sec
	m[result.ThroughputTxBitsPerSec] = float64(tx) * 8 / sec
	if !in.External && in.Srv.WallMicros > 0 {
		m[result.ThroughputRxBitsPerSec] = float64(in.Srv.RxBytes) * 8 / (float64(in.Srv.WallMicros) / 1e6)
	}
}

// udpStreamMetrics: the headline is the receiver's goodput; the sent rate,
// loss, duplicates and reordering stand beside it. Loss is exact: both ends
// count only datagrams stamped with the measured phase, the client after
// its senders stopped, the server after its queues drained.
func udpStreamMetrics(o *Out, in In, sec float64) {
	m := o.Metrics
	m[result.ThroughputTxBitsPerSec] = float64(in.UDPSentBytes) * 8 / sec
	m[result.DatagramsSent] = float64(in.UDPSent)
	r := in.Srv.UDPRecv
	if r == nil {
		o.warn("the server sent no receive account: received throughput and loss not measured (is the server an older cnibench?)")
		return
	}
	rx := float64(r.Bytes) * 8 / sec
	m[result.ThroughputBitsPerSec] = rx
	m[result.ThroughputRxBitsPerSec] = rx
	m[result.DatagramsReceived] = float64(r.Received)
	m[result.DatagramsDuplicated] = float64(r.Duplicates)
	m[result.DatagramsReordered] = float64(r.Reordered)
	if !r.Settled {
		o.warn("the server's receive counters were still moving %d ms after the client stopped sending: loss may count datagrams still queued", r.DrainMillis)
	}
	if r.Foreign > 0 {
		o.warn("the server dropped %d datagram(s) without this session's cookie or from another address", r.Foreign)
	}
	if in.UDPSent == 0 {
		return
	}
	lost := float64(in.UDPSent) - float64(r.Received)
	if lost < 0 {
		o.warn("the server received %d measured datagrams but the client sent %d: loss not measured", r.Received, in.UDPSent)
		return
	}
	m[result.DatagramsLost] = lost
	m[result.LossPct] = 100 * lost / float64(in.UDPSent)
}

// fragMetrics records both namespaces' IP fragmentation and reassembly.
func fragMetrics(o *Out, in In) {
	put := func(side string, f hoststat.IPFrag) {
		m := o.Metrics
		m[side+"_ip_frag_creates"] = float64(f.FragCreates)
		m[side+"_ip_frag_oks"] = float64(f.FragOKs)
		m[side+"_ip_reasm_reqds"] = float64(f.ReasmReqds)
		m[side+"_ip_reasm_oks"] = float64(f.ReasmOKs)
		m[side+"_ip_reasm_fails"] = float64(f.ReasmFails)
	}
	if err := firstErr(in.E0.FragErr, in.E1.FragErr); err != nil {
		o.warn("client IP fragmentation counters not measured: %v", err)
	} else {
		d := in.E1.Frag.Sub(in.E0.Frag)
		put("client", d)
		if d.FragCreates > 0 {
			o.warn("the client's namespace created IP fragments during the window (client_ip_frag_creates): datagrams were larger than the path MTU")
		}
	}
	switch {
	case in.Srv.IPFrag != nil:
		put("server", *in.Srv.IPFrag)
	case in.Srv.IPFragError != "":
		o.warn("server IP fragmentation counters not measured: %s", in.Srv.IPFragError)
	default:
		o.warn("server IP fragmentation counters not measured: the server did not send them")
	}
}

func latencyMetrics(m map[string]float64, lat, conn Percentiles) {
	if lat.Count > 0 {
		m[result.LatencyUsMean] = lat.Mean
		m[result.LatencyUsP50] = lat.P50
		m[result.LatencyUsP90] = lat.P90
		m[result.LatencyUsP99] = lat.P99
		m[result.LatencyUsP999] = lat.P999
		m[result.LatencyUsMax] = lat.Max
	}
	if conn.Count > 0 {
		m[result.ConnectUsP50] = conn.P50
		m[result.ConnectUsP90] = conn.P90
		m[result.ConnectUsP99] = conn.P99
		m[result.ConnectUsMax] = conn.Max
	}
}

// cpuMetrics: the client's and server's process CPU, the client host's and
// (when it is another host) the server host's CPU, and the CPU cost per
// unit of work (bit/s for streams, transactions otherwise) over every host
// measured, each host counted once.
func cpuMetrics(o *Out, in In, sec, units float64) {
	m := o.Metrics
	window := in.E1.At.Sub(in.E0.At)
	if err := firstErr(in.E0.CPUErr, in.E1.CPUErr); err != nil {
		o.warn("client CPU not measured: %v", err)
	} else {
		m[result.ClientCPUPct] = 100 * (in.E1.CPU.User + in.E1.CPU.Sys - in.E0.CPU.User - in.E0.CPU.Sys).Seconds() / sec
		if in.E1.CPU.MaxRSS > 0 {
			m[result.ClientRSSBytes] = float64(in.E1.CPU.MaxRSS)
		}
	}
	srv := in.Srv
	srvWall := time.Duration(srv.WallMicros) * time.Microsecond
	if in.Test == engine.UDPStream {
		// The server's window includes draining its queues after the last
		// datagram: charge that work to the client's window.
		srvWall = window
	}
	if !in.External {
		switch {
		case srv.CPUError != "":
			o.warn("server CPU not measured: %s", srv.CPUError)
		case srvWall > 0:
			m[result.ServerCPUPct] = 100 * float64(srv.CPUUserMicro+srv.CPUSysMicro) / float64(srvWall.Microseconds())
		}
	}
	var busy float64 // busy CPU seconds of every host measured
	complete := true
	if err := firstErr(in.E0.HostErr, in.E1.HostErr); err != nil {
		o.warn("client host CPU not measured: %v", err)
		complete = false
	} else {
		h := hoststat.HostCPUOver(in.E1.Host.Sub(in.E0.Host), window)
		m[result.HostCPUPct] = h.BusyPct
		m[result.HostCPUUserPct] = h.UserPct
		m[result.HostCPUSysPct] = h.SysPct
		m[result.HostCPUSoftirqPct] = h.SoftIRQPct
		m[result.HostCPUIrqPct] = h.IRQPct
		busy += h.BusySeconds
	}
	if !in.External {
		same := in.BootID != "" && in.BootID == srv.BootID
		if in.BootID != "" && srv.BootID != "" {
			o.SameHost = &same
		}
		switch {
		case same:
			// host_cpu_* already covers the server's end.
		case srv.HostStat == nil:
			reason := srv.HostError
			if reason == "" {
				reason = "the server did not send it"
			}
			o.warn("server host CPU not measured: %s", reason)
			complete = false
		case srvWall > 0:
			h := hoststat.HostCPUOver(*srv.HostStat, srvWall)
			m[result.RemoteHostCPUPct] = h.BusyPct
			m[result.RemoteHostCPUSysPct] = h.SysPct
			m[result.RemoteHostCPUSoftirqPct] = h.SoftIRQPct
			busy += h.BusySeconds * sec / srvWall.Seconds()
		}
	}
	if !complete {
		return
	}
	// The run's CPU, not the hosts': other programs' CPU and steal are
	// taken out (foreign.go).
	same := o.SameHost != nil && *o.SameHost
	foreignMetrics(o, in, same)
	if f, ok := m[result.ForeignCPUPct]; ok {
		st := m[result.StealPct]
		busy -= (f + st) / 100 * sec
		m[result.RunCPUPct] = max(0, m[result.HostCPUPct]-f-st)
	}
	if f, ok := m[result.RemoteForeignCPUPct]; ok {
		busy -= (f + m[result.RemoteStealPct]) / 100 * sec
	}
	if busy < 0 {
		busy = 0
	}
	if engine.IsStream(in.Test) {
		if units > 0 {
			m[result.CPUPctPer100Gbit] = 100 * busy / sec * 100e9 / units
		}
	} else if units > 0 {
		m[result.CPUUsPerTrans] = busy * 1e6 / units
	}
}

// Counters is a snapshot of all flows.
type Counters struct {
	TxBytes, Trans, Measured, Errors uint64
	// icmp_echo's requests sent and lost, late and mismatched replies.
	Sent, Lost, Late, Mismatched uint64
}

// Percentiles of a latency histogram, in microseconds.
type Percentiles struct {
	Count                          int64
	Mean, P50, P90, P99, P999, Max float64
}
