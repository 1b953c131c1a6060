package engine

import (
	"log/slog"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Datagram layouts. udp_stream datagrams start with an 8-byte sequence
// number and a phase byte (warm-up, measured, after), so the receiver
// counts exactly the datagrams sent inside the measured window and loss
// needs no clock agreement. udp_rr requests and responses start with the
// request's sequence number (its first min(8, size) bytes), so late answers are told apart.
const (
	udpStreamHeader = 9

	phaseWarmup   = 0
	phaseMeasured = 1
	phaseAfter    = 2
)

// udpServer is the server side of udp_stream (a sink) and udp_rr (an echo
// of the sequence number padded to the response size).
type udpServer struct {
	fds    []int
	port   int
	setup  Setup
	closed atomic.Bool
	wg     sync.WaitGroup

	rxBytes    atomic.Uint64
	rxMeasured atomic.Uint64
	trans      atomic.Uint64
	log        *slog.Logger
}

func newUDPServer(ip netip.Addr, _ sessionInfo, s *Setup, _ time.Duration, log *slog.Logger) (*udpServer, error) {
	fds, port, err := listenUDP(ip, s.Flows, 500*time.Millisecond)
	if err != nil {
		return nil, err
	}
	us := &udpServer{fds: fds, port: port, setup: *s, log: log}
	reserveThreads(len(fds))
	for _, fd := range fds {
		us.wg.Add(1)
		go us.worker(fd)
	}
	return us, nil
}

func (us *udpServer) Port() int { return us.port }

func (us *udpServer) Counters() srvCounters {
	return srvCounters{RxBytes: us.rxBytes.Load(), RxDatagrams: us.rxMeasured.Load(), Trans: us.trans.Load()}
}

func (us *udpServer) Close() {
	if us.closed.Swap(true) {
		return
	}
	for _, fd := range us.fds {
		shutdownFD(fd)
	}
	us.wg.Wait()
	for _, fd := range us.fds {
		closeFD(fd)
	}
	releaseThreads(len(us.fds))
}

func (us *udpServer) worker(fd int) {
	defer us.wg.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	size := us.setup.MsgSize
	if us.setup.Test == UDPRR {
		size = us.setup.ReqSize
	}
	buf := make([]byte, size+1)
	resp := make([]byte, us.setup.RespSize)
	var y yielder
	for !us.closed.Load() {
		y.yield()
		n, from, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			if err == unix.EINTR || errTimeout(err) {
				continue
			}
			return
		}
		if us.closed.Load() {
			return
		}
		us.rxBytes.Add(uint64(n))
		switch us.setup.Test {
		case UDPStream:
			if n >= udpStreamHeader && buf[8] == phaseMeasured {
				us.rxMeasured.Add(1)
			}
		case UDPRR:
			if n < 1 || from == nil {
				continue
			}
			// Echo the request's sequence number bytes (as many as fit).
			copy(resp[:min(8, len(resp))], buf[:min(n, 8)])
			if err := unix.Sendto(fd, resp, 0, from); err == nil {
				us.trans.Add(1)
			}
		}
	}
}
