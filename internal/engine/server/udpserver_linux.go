package server

import (
	"fmt"
	"log/slog"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/sock"
	"github.com/cnibench/cnibench/internal/engine/window"
)

// udpServer is the server side of udp_stream (a sink) and udp_rr (an echo
// of the sequence number padded to the response size). It has one socket
// per flow, each served by its own thread; a classic BPF program on the
// SO_REUSEPORT group steers each datagram to its flow's socket by the flow
// index in its header, so flows never share a worker by hash collision.
// Datagrams from any address but the control peer's, or without the
// session's cookie, are dropped: the server answers nobody else.
type udpServer struct {
	fds    []int
	port   int
	setup  engine.Setup
	si     sessionInfo
	steer  bool
	closed atomic.Bool
	wg     sync.WaitGroup

	rxBytes atomic.Uint64
	trans   atomic.Uint64
	foreign atomic.Uint64
	flows   []udpFlowRecv
	log     *slog.Logger
}

type udpFlowRecv struct {
	mu sync.Mutex
	t  seqTracker
}

func newUDPServer(ip netip.Addr, si sessionInfo, s *engine.Setup, _ time.Duration, log *slog.Logger) (*udpServer, error) {
	fds, port, steer, err := listenUDPSteered(ip, s.Flows, 500*time.Millisecond)
	if err != nil {
		return nil, err
	}
	if !steer {
		log.Warn("could not attach the UDP flow-steering program; flows are spread by hash")
	}
	us := &udpServer{fds: fds, port: port, setup: *s, si: si, steer: steer, log: log, flows: make([]udpFlowRecv, s.Flows)}
	sock.ReserveThreads(len(fds))
	for _, fd := range fds {
		us.wg.Add(1)
		go us.worker(fd)
	}
	return us, nil
}

func (us *udpServer) Port() int { return us.port }

func (us *udpServer) Counters() window.SrvCounters {
	r := us.recv()
	return window.SrvCounters{RxBytes: us.rxBytes.Load(), RxDatagrams: r.Received, Trans: us.trans.Load()}
}

// recv sums the flows' measured-datagram accounts.
func (us *udpServer) recv() engine.UDPRecv {
	var r engine.UDPRecv
	for i := range us.flows {
		f := &us.flows[i]
		f.mu.Lock()
		r.Received += f.t.Unique()
		r.Bytes += f.t.Bytes
		r.Gaps += f.t.Gaps
		r.Duplicates += f.t.Dups
		r.Reordered += f.t.Reordered
		f.mu.Unlock()
	}
	r.Foreign = us.foreign.Load()
	return r
}

// drainUDPStream drains a udp_stream data plane's queues (until its
// counters settle, at most bound) and returns its account; nil for any
// other data plane.
func drainUDPStream(dp dataPlane, bound time.Duration) *engine.UDPRecv {
	us, ok := dp.(*udpServer)
	if !ok || us.setup.Test != engine.UDPStream {
		return nil
	}
	r := us.drain(bound)
	return &r
}

// drain waits until every socket's receive queue is empty and the counters
// have not moved for a few polls, at most bound; it returns the account.
func (us *udpServer) drain(bound time.Duration) engine.UDPRecv {
	const poll, quiet = 5 * time.Millisecond, 4
	t0 := time.Now()
	last := us.rxBytes.Load()
	still := 0
	settled := false
	for time.Since(t0) < bound {
		time.Sleep(poll)
		now := us.rxBytes.Load()
		if now == last && us.queuesEmpty() {
			still++
		} else {
			still = 0
		}
		last = now
		if still >= quiet {
			settled = true
			break
		}
	}
	r := us.recv()
	r.Settled, r.DrainMillis = settled, time.Since(t0).Milliseconds()
	return r
}

// queuesEmpty reports whether no socket has a datagram waiting (SIOCINQ
// gives the size of the next datagram, 0 when none).
func (us *udpServer) queuesEmpty() bool {
	for _, fd := range us.fds {
		n, err := unix.IoctlGetInt(fd, unix.SIOCINQ)
		if err != nil || n > 0 {
			return false
		}
	}
	return true
}

func (us *udpServer) Close() {
	if us.closed.Swap(true) {
		return
	}
	for _, fd := range us.fds {
		sock.Shutdown(fd)
	}
	us.wg.Wait()
	for _, fd := range us.fds {
		sock.Close(fd)
	}
	sock.ReleaseThreads(len(us.fds))
}

// fromPeer reports whether a datagram's source is the session's peer.
func (us *udpServer) fromPeer(from unix.Sockaddr) bool {
	var a netip.Addr
	switch sa := from.(type) {
	case *unix.SockaddrInet4:
		a = netip.AddrFrom4(sa.Addr)
	case *unix.SockaddrInet6:
		a = netip.AddrFrom16(sa.Addr).Unmap()
	default:
		return false
	}
	return a == us.si.Peer.WithZone("")
}

func (us *udpServer) worker(fd int) {
	defer us.wg.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	size := us.setup.MsgSize
	if us.setup.Test == engine.UDPRR {
		size = engine.UDPRRWireSize(us.setup.ReqSize)
	}
	buf := make([]byte, size+1)
	resp := make([]byte, us.setup.RespSize)
	engine.FillPayloadAfter(resp, 8) // the echoed sequence number is written per response
	var y sock.Yielder
	for !us.closed.Load() {
		y.Yield()
		n, from, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			if err == unix.EINTR || sock.IsTimeout(err) {
				continue
			}
			return
		}
		if us.closed.Load() {
			return
		}
		cookie, seq, flow, ok := engine.ParseUDPHeader(buf[:n])
		if !ok || cookie != us.si.Cookie || flow >= len(us.flows) || from == nil || !us.fromPeer(from) {
			us.foreign.Add(1)
			continue
		}
		if us.setup.Test == engine.UDPStream && engine.IsUDPHello(buf[:n], cookie, flow) {
			// A flow's handshake (Config.UDPHandshake), before its stream:
			// answer it, as iperf3's server answers its client's first
			// datagram, and count nothing.
			_ = unix.Sendto(fd, buf[:engine.UDPStreamHeader], 0, from)
			continue
		}
		us.rxBytes.Add(uint64(n))
		switch us.setup.Test {
		case engine.UDPStream:
			if n >= engine.UDPStreamHeader && buf[engine.UDPOffPhase] == engine.PhaseMeasured {
				f := &us.flows[flow]
				f.mu.Lock()
				f.t.add(seq, n)
				f.mu.Unlock()
			}
		case engine.UDPRR:
			// Echo the request's sequence number bytes (as many as fit),
			// to the session's peer only.
			copy(resp[:min(8, len(resp))], buf[engine.UDPOffSeq:engine.UDPOffSeq+8])
			if err := unix.Sendto(fd, resp, 0, from); err == nil {
				us.trans.Add(1)
			}
		}
	}
}

// listenUDPSteered opens n UDP sockets sharing one port with SO_REUSEPORT
// and attaches a classic BPF program that sends each datagram to socket
// (flow index mod n). steered is false when the program could not be
// attached (the kernel then spreads flows by hash).
func listenUDPSteered(ip netip.Addr, n int, timeout time.Duration) (fds []int, port int, steered bool, err error) {
	closeAll := func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	for i := 0; i < n; i++ {
		sa, family := sock.Sockaddr(ip, port)
		fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
		if err != nil {
			closeAll()
			return nil, 0, false, fmt.Errorf("socket: %w", err)
		}
		fds = append(fds, fd)
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
			closeAll()
			return nil, 0, false, fmt.Errorf("set SO_REUSEPORT: %w", err)
		}
		// Large receive buffers, as iperf3 and netperf users set them.
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
		if err := sock.SetTimeouts(fd, timeout); err != nil {
			closeAll()
			return nil, 0, false, err
		}
		if i == 0 {
			// Attach before any other socket joins, so no datagram is
			// ever hashed to the wrong one.
			steered = attachSteering(fd, n) == nil
		}
		if err := unix.Bind(fd, sa); err != nil {
			closeAll()
			return nil, 0, false, fmt.Errorf("bind udp %s:%d: %w", ip, port, err)
		}
		if port == 0 {
			p, err := sock.LocalPort(fd)
			if err != nil {
				closeAll()
				return nil, 0, false, err
			}
			port = p
		}
	}
	return fds, port, steered, nil
}

// steeringProgram is a reuseport classic BPF program: it runs with the
// packet's data at the UDP payload, loads the big-endian flow index and
// returns it modulo n as the index of the group's socket (sockets are
// numbered in the order they bound).
func steeringProgram(n int) []unix.SockFilter {
	return []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_H | unix.BPF_ABS, K: engine.UDPOffFlow},
		{Code: unix.BPF_ALU | unix.BPF_MOD | unix.BPF_K, K: uint32(n)},
		{Code: unix.BPF_RET | unix.BPF_A},
	}
}

func attachSteering(fd, n int) error {
	prog := steeringProgram(n)
	fp := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_REUSEPORT_CBPF, &fp); err != nil {
		return fmt.Errorf("attach SO_ATTACH_REUSEPORT_CBPF: %w", err)
	}
	return nil
}
