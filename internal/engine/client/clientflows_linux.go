package client

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/sock"
)

// startFlows opens the flows of a TCP or UDP test and starts their traffic.
// It returns once every flow has connected (or failed to), so the warm-up
// runs with all flows established.
func (w *workload) startFlows(ip netip.Addr, port int) error {
	ready := make(chan error, w.cfg.Flows)
	sock.ReserveThreads(w.cfg.Flows)
	w.threads = w.cfg.Flows
	for i := 0; i < w.cfg.Flows; i++ {
		w.wg.Add(1)
		go w.runFlow(i, ip, port, ready)
	}
	var first error
	for i := 0; i < w.cfg.Flows; i++ {
		if err := <-ready; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		w.halt()
		return first
	}
	return nil
}

func (w *workload) runFlow(i int, ip netip.Addr, port int, ready chan<- error) {
	defer w.wg.Done()
	// Blocking socket calls park the flow's thread in the kernel, as
	// netperf's do: a goroutine in a system call keeps its OS thread. The
	// goroutine is not locked to it (runtime.LockOSThread): the flow's
	// periodic runtime.Gosched (see sock.Yielder) on a locked thread hands the P
	// to another thread and back, about six futex calls and two extra
	// context switches each time; unlocked, the same thread picks the
	// goroutine up again.
	switch w.cfg.Test {
	case engine.TCPStream:
		w.tcpStream(i, ip, port, ready)
	case engine.TCPRR:
		w.tcpRR(i, ip, port, ready)
	case engine.TCPCRR:
		ready <- nil
		w.tcpCRR(i, ip, port)
	case engine.UDPStream:
		w.udpStream(i, ip, port, ready)
	case engine.UDPRR:
		w.udpRR(i, ip, port, ready)
	case engine.ICMPEcho:
		w.icmpEcho(i, ip, ready)
	default:
		ready <- fmt.Errorf("test %s has no socket flow", w.cfg.Test)
	}
}

// started registers flow i's socket and reports it ready, or reports the
// dial error; it returns whether the flow may run.
func (w *workload) started(i, fd int, err error, ready chan<- error) bool {
	if err != nil {
		ready <- err
		return false
	}
	w.track(i, fd)
	ready <- nil
	return true
}

func (w *workload) tcpStream(i int, ip netip.Addr, port int, ready chan<- error) {
	ip, port = w.target(i, 0, ip, port)
	fd, _, err := sock.DialTCP(ip, port, w.cfg.Timeout, false, false)
	if err == nil && w.svcPreamble != nil {
		if err = sock.WriteFull(fd, w.svcPreamble, false); err != nil {
			sock.Close(fd)
			err = fmt.Errorf("tcp_stream service preamble: %w", err)
		}
	}
	if !w.started(i, fd, err, ready) {
		return
	}
	defer w.untrack(i, fd)
	buf := make([]byte, w.cfg.MsgSize)
	engine.FillPayload(buf)
	f := &w.flows[i]
	p := newPacer(w.cfg.Rate / 8 / float64(w.cfg.Flows))
	var y sock.Yielder
	for !w.stop.Load() {
		y.Yield()
		if err := sock.WriteFull(fd, buf, false); err != nil {
			if !sock.IsTimeout(err) {
				w.fail(i, fmt.Errorf("tcp_stream write: %w", err))
				return
			}
			continue
		}
		f.txBytes.Add(uint64(len(buf)))
		f.trans.Add(1)
		p.wait(float64(len(buf)), &w.stop)
	}
}

func (w *workload) tcpRR(i int, ip netip.Addr, port int, ready chan<- error) {
	ip, port = w.target(i, 0, ip, port)
	fd, _, err := sock.DialTCP(ip, port, w.cfg.Timeout, true, w.cfg.BusyPoll)
	if err == nil && w.svcPreamble != nil {
		if err = sock.WriteFull(fd, w.svcPreamble, false); err != nil {
			sock.Close(fd)
			err = fmt.Errorf("tcp_rr service preamble: %w", err)
		}
	}
	if !w.started(i, fd, err, ready) {
		return
	}
	defer w.untrack(i, fd)
	req := make([]byte, w.cfg.ReqSize)
	engine.FillPayload(req)
	resp := make([]byte, w.cfg.RespSize)
	f := &w.flows[i]
	p := newPacer(w.cfg.Rate / float64(w.cfg.Flows))
	spin := w.cfg.BusyPoll
	var y sock.Yielder
	for !w.stop.Load() {
		y.Yield()
		t0 := p.sendTime(time.Now())
		if err := writeReq(fd, req, spin); err != nil {
			w.fail(i, fmt.Errorf("tcp_rr send request: %w", err))
			return
		}
		if err := sock.ReadFull(fd, resp, spin); err != nil {
			w.fail(i, fmt.Errorf("tcp_rr read response: %w", err))
			return
		}
		d := time.Since(t0)
		f.trans.Add(1)
		f.txBytes.Add(uint64(len(req)))
		if w.measuring() {
			w.lat.record(i, d)
		}
		p.wait(1, &w.stop)
	}
}

func (w *workload) tcpCRR(i int, ip netip.Addr, port int) {
	// In service mode the preamble and the request go out in one write.
	req := append(append([]byte(nil), w.svcPreamble...), make([]byte, w.cfg.ReqSize)...)
	engine.FillPayload(req[len(w.svcPreamble):])
	resp := make([]byte, w.cfg.RespSize)
	f := &w.flows[i]
	p := newPacer(w.cfg.Rate / float64(w.cfg.Flows))
	spin := w.cfg.BusyPoll
	var y sock.Yielder
	for k := 0; !w.stop.Load(); k++ {
		y.Yield()
		t0 := p.sendTime(time.Now())
		dip, dport := w.target(i, k, ip, port)
		fd, ct, err := sock.DialTCP(dip, dport, w.cfg.Timeout, true, spin)
		if err != nil {
			w.fail(i, fmt.Errorf("tcp_crr: %w", err))
			// Do not spin on a refused or exhausted connect.
			time.Sleep(time.Millisecond)
			continue
		}
		w.track(i, fd)
		err = writeReq(fd, req, spin)
		if err == nil {
			err = sock.ReadFull(fd, resp, spin)
		}
		if err == nil {
			// The server closes first (as netperf's TCP_CRR): wait for its
			// FIN, so the transaction includes the teardown.
			err = readEOF(fd, resp[:1], spin)
		}
		w.untrack(i, fd)
		d := time.Since(t0)
		if err != nil {
			w.fail(i, fmt.Errorf("tcp_crr transaction: %w", err))
			continue
		}
		f.trans.Add(1)
		f.txBytes.Add(uint64(w.cfg.ReqSize))
		if w.measuring() {
			w.lat.record(i, d)
			w.conn.record(i, ct)
		}
		p.wait(1, &w.stop)
	}
}

func (w *workload) udpStream(i int, ip netip.Addr, port int, ready chan<- error) {
	fd, err := sock.DialUDP(ip, port, w.cfg.Timeout)
	if err == nil && w.cfg.UDPHandshake {
		if herr := udpHandshake(fd, w.cookie, i, w.cfg.Timeout); herr != nil {
			unix.Close(fd)
			fd, err = -1, herr
		}
	}
	if !w.started(i, fd, err, ready) {
		return
	}
	defer w.untrack(i, fd)
	buf := make([]byte, w.cfg.MsgSize)
	engine.FillPayloadAfter(buf, engine.UDPStreamHeader) // the header is written per datagram
	f := &w.flows[i]
	p := newPacer(w.cfg.Rate / 8 / float64(w.cfg.Flows))
	var seq uint64
	var y sock.Yielder
	for !w.stop.Load() {
		y.Yield()
		ph := byte(w.phase.Load())
		if ph == engine.PhaseAfter {
			// The window closed: stop sending so the receiver can drain.
			return
		}
		seq++
		engine.PutUDPHeader(buf, w.cookie, seq, i)
		buf[engine.UDPOffPhase] = ph
		_, err := unix.Write(fd, buf)
		if err != nil {
			switch {
			case err == unix.EINTR || sock.IsTimeout(err):
				continue
			case err == unix.ECONNREFUSED || err == unix.ENOBUFS:
				// An ICMP error from an earlier datagram or a full
				// qdisc: the datagram is lost, as with iperf3.
				f.errors.Add(1)
				continue
			}
			w.fail(i, fmt.Errorf("udp_stream send: %w", err))
			return
		}
		f.txBytes.Add(uint64(len(buf)))
		f.trans.Add(1)
		if ph == engine.PhaseMeasured {
			f.measured.Add(1)
		}
		p.wait(float64(len(buf)), &w.stop)
	}
}

func (w *workload) udpRR(i int, ip netip.Addr, port int, ready chan<- error) {
	// A lost datagram must not stall the flow: wait at most this long.
	timeout := 200 * time.Millisecond
	if w.cfg.Timeout < timeout {
		timeout = w.cfg.Timeout
	}
	fd, err := sock.DialUDP(ip, port, timeout)
	if !w.started(i, fd, err, ready) {
		return
	}
	defer w.untrack(i, fd)
	req := make([]byte, engine.UDPRRWireSize(w.cfg.ReqSize))
	engine.FillPayloadAfter(req, engine.UDPRRHeader) // the header is written per request
	resp := make([]byte, w.cfg.RespSize+1)
	f := &w.flows[i]
	p := newPacer(w.cfg.Rate / float64(w.cfg.Flows))
	var seq uint64
	var y sock.Yielder
	for !w.stop.Load() {
		y.Yield()
		seq++
		engine.PutUDPHeader(req, w.cookie, seq, i)
		t0 := p.sendTime(time.Now())
		if _, err := unix.Write(fd, req); err != nil {
			if err == unix.ECONNREFUSED || err == unix.ENOBUFS || err == unix.EINTR {
				f.errors.Add(1)
				continue
			}
			w.fail(i, fmt.Errorf("udp_rr send: %w", err))
			return
		}
		ok := false
		var y sock.Yielder
		for !w.stop.Load() {
			y.Yield()
			n, err := unix.Read(fd, resp)
			if err != nil {
				if err == unix.EINTR {
					continue
				}
				break // timeout or ICMP error: count as a lost transaction
			}
			if n >= 1 && getSeq(resp[:min(n, w.cfg.RespSize)]) == seqMask(seq, w.cfg.RespSize) {
				ok = true
				break
			}
			// A late answer to an earlier request: keep waiting.
		}
		if !ok {
			if !w.stop.Load() {
				f.errors.Add(1)
			}
			continue
		}
		f.trans.Add(1)
		f.txBytes.Add(uint64(len(req)))
		if w.measuring() {
			w.lat.record(i, time.Since(t0))
		}
		p.wait(1, &w.stop)
	}
}

// getSeq reads the sequence number echoed at the start of a udp_rr
// response (its first min(8, size) bytes).
func getSeq(b []byte) uint64 {
	var tmp [8]byte
	copy(tmp[:], b[:min(len(b), 8)])
	return binary.LittleEndian.Uint64(tmp[:])
}

// seqMask is seq as far as a response of respSize bytes carries it.
func seqMask(seq uint64, respSize int) uint64 {
	n := min(respSize, 8)
	if n >= 8 {
		return seq
	}
	return seq & (1<<(8*uint(n)) - 1)
}

// readEOF waits for the peer to close the connection; data instead of EOF
// is a protocol error.
func readEOF(fd int, buf []byte, spin bool) error {
	for {
		n, err := sock.RecvBlock(fd, buf)
		if err != nil {
			if err == unix.EINTR || (spin && sock.IsTimeout(err)) {
				continue
			}
			return err
		}
		if n == 0 {
			return nil
		}
		return fmt.Errorf("server sent %d unexpected byte(s) after the response", n)
	}
}

// writeReq sends a request: without scheduler bookkeeping when small and
// blocking, as a plain (possibly spinning) write otherwise.
func writeReq(fd int, req []byte, spin bool) error {
	if spin {
		return sock.WriteFull(fd, req, true)
	}
	return sock.WriteSmall(fd, req)
}

// udpHandshakeRetry is how long the handshake waits for the server's reply
// before it sends its datagram again.
const udpHandshakeRetry = 100 * time.Millisecond

// udpHandshake sends flow's handshake datagram on the connected socket fd
// and waits for the server's reply, resending every udpHandshakeRetry, for
// at most timeout (Config.UDPHandshake). It leaves fd's receive timeout at
// udpHandshakeRetry (udp_stream never reads).
func udpHandshake(fd int, cookie uint64, flow int, timeout time.Duration) error {
	tv := unix.NsecToTimeval(udpHandshakeRetry.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fmt.Errorf("udp_stream handshake: set receive timeout: %w", err)
	}
	hello := engine.UDPHello(cookie, flow)
	buf := make([]byte, 2*engine.UDPStreamHeader)
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if _, err := unix.Write(fd, hello); err != nil && err != unix.ECONNREFUSED && err != unix.EINTR && err != unix.ENOBUFS {
			return fmt.Errorf("udp_stream handshake: send: %w", err)
		}
		for time.Now().Before(deadline) {
			n, err := unix.Read(fd, buf)
			if err != nil {
				break // timeout or an ICMP error: send again
			}
			if engine.IsUDPHello(buf[:n], cookie, flow) {
				return nil
			}
		}
	}
	return fmt.Errorf("udp_stream handshake: no reply from the server within %s (--udp-handshake needs a server that answers it, and the path must carry the reply)", timeout)
}
