package proof

// The probes of MeasureEnforcement and MeasureRelease: a busy UDP sender in
// the client pod and a receiver in the server pod.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// probeSocket creates a UDP socket inside a namespace.
func probeSocket(do func(func() error) error) (int, error) {
	fd := -1
	err := do(func() (err error) {
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		return err
	})
	if err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return -1, fmt.Errorf("create udp socket: %w", err)
	}
	return fd, nil
}

func probeSockaddr(a netip.Addr, port uint16) *unix.SockaddrInet4 {
	return &unix.SockaddrInet4{Addr: a.As4(), Port: int(port)}
}

// Destinations the receiver tells apart.
const (
	probeToDenied = iota
	probeToAllowed
)

// probeRxStats are the receiver's counters: per destination, the number of
// probes that arrived and the lowest and highest sequence number (-1: none).
type probeRxStats struct {
	arrived  [2]int64
	min, max [2]int64
}

// receiver is one UDP socket on 0.0.0.0:port in the server pod; IP_PKTINFO
// tells which of the server's addresses a probe was sent to.
type probeReceiver struct {
	fd    int
	port  uint16
	addrs [2][4]byte

	arrived  [2]atomic.Int64
	min, max [2]atomic.Int64
	stop     atomic.Bool
	done     chan struct{}
}

func newProbeReceiver(p Probe, pin probePinning) (*probeReceiver, error) {
	fd, err := probeSocket(p.ServerDo)
	if err != nil {
		return nil, fmt.Errorf("probeReceiver in the server pod: %w", err)
	}
	r := &probeReceiver{fd: fd, addrs: [2][4]byte{p.Denied.As4(), p.Allowed.As4()}, done: make(chan struct{})}
	for i := range r.min {
		r.min[i].Store(-1)
		r.max[i].Store(-1)
	}
	fail := func(what string, err error) (*probeReceiver, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("probeReceiver in the server pod: %s: %w", what, err)
	}
	// A deep queue so that a receiver briefly behind the busy sender loses
	// nothing (a loss just before enforcement would blur the proof).
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 32<<20); err != nil {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 32<<20); err != nil {
			return fail("SO_RCVBUF", err)
		}
	}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_PKTINFO, 1); err != nil {
		return fail("IP_PKTINFO", err)
	}
	tv := unix.NsecToTimeval(int64(10 * time.Millisecond))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fail("SO_RCVTIMEO", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: int(p.Port)}); err != nil {
		return fail(fmt.Sprintf("bind 0.0.0.0:%d", p.Port), err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return fail("getsockname", err)
	}
	r.port = uint16(sa.(*unix.SockaddrInet4).Port)
	go func() {
		pin.receiver()
		r.loop()
	}()
	return r, nil
}

func (r *probeReceiver) loop() {
	defer close(r.done)
	// recvmsg(2) by hand: unix.Recvmsg allocates per call, and garbage
	// collection pauses would stall the sender too.
	var buf [64]byte
	var oob [64]byte
	iov := unix.Iovec{Base: &buf[0]}
	iov.SetLen(len(buf))
	msg := unix.Msghdr{Iov: &iov, Iovlen: 1, Control: &oob[0]}
	for !r.stop.Load() {
		msg.SetControllen(len(oob))
		msg.Flags = 0
		n, _, errno := unix.Syscall(unix.SYS_RECVMSG, uintptr(r.fd), uintptr(unsafe.Pointer(&msg)), 0)
		if errno != 0 || n != 8 {
			continue // timeout (to look at stop), EINTR, or not a probe
		}
		d := r.dst(oob[:msg.Controllen])
		if d < 0 {
			continue
		}
		seq := int64(binary.BigEndian.Uint64(buf[:8]))
		if r.arrived[d].Load() == 0 || seq < r.min[d].Load() {
			r.min[d].Store(seq)
		}
		if seq > r.max[d].Load() {
			r.max[d].Store(seq)
		}
		r.arrived[d].Add(1)
	}
}

// dst returns which destination the IP_PKTINFO message names (the address
// in the packet's header), or -1.
func (r *probeReceiver) dst(oob []byte) int {
	hdr := unix.CmsgLen(0)
	for len(oob) >= hdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < hdr || l > len(oob) {
			return -1
		}
		if h.Level == unix.IPPROTO_IP && h.Type == unix.IP_PKTINFO && l-hdr >= unix.SizeofInet4Pktinfo {
			// struct in_pktinfo: ifindex, spec_dst, addr (the header's).
			a := [4]byte(oob[hdr+8 : hdr+12])
			for i, want := range r.addrs {
				if a == want {
					return i
				}
			}
			return -1
		}
		if sp := unix.CmsgSpace(l - hdr); sp < len(oob) {
			oob = oob[sp:]
		} else {
			break
		}
	}
	return -1
}

// drain waits until the probe lastAllowed to Allowed arrived (then every
// probe sent before it that was going to arrive has) or until max passed.
func (r *probeReceiver) drain(lastAllowed int64, max time.Duration) {
	deadline := time.Now().Add(max)
	for r.max[probeToAllowed].Load() < lastAllowed && time.Now().Before(deadline) {
		time.Sleep(100 * time.Microsecond)
	}
}

func (r *probeReceiver) stats() probeRxStats {
	var s probeRxStats
	for i := range s.arrived {
		s.arrived[i], s.min[i], s.max[i] = r.arrived[i].Load(), r.min[i].Load(), r.max[i].Load()
	}
	return s
}

func (r *probeReceiver) close() {
	r.stop.Store(true)
	<-r.done
	unix.Close(r.fd)
}

// sender sends the probes from the client pod over two connected sockets.
type probeSender struct {
	p      Probe
	fd     [2]int
	buf    [8]byte
	aring  []int64 // send time of Allowed probe seq, ns since base
	amask  int64
	maxNs  int64
	warmNs int64

	startNs, returnedNs atomic.Int64
	abort               atomic.Bool
	done                chan struct{}

	// Written by loop, read after done.
	sent, allowedSent, sendErrors int64
	throttled                     int64 // ns spent waiting for the receiver
	firstNs, endNs                int64
	reason                        string
}

func newProbeSender(p Probe, port uint16) (*probeSender, error) {
	s := &probeSender{p: p, fd: [2]int{-1, -1}, aring: make([]int64, 1<<16), amask: 1<<16 - 1, done: make(chan struct{})}
	s.returnedNs.Store(-1)
	s.startNs.Store(-1)
	for i, a := range []netip.Addr{p.Denied, p.Allowed} {
		fd, err := probeSocket(p.ClientDo)
		if err != nil {
			s.close()
			return nil, fmt.Errorf("sender in the client pod: %w", err)
		}
		s.fd[i] = fd
		if err := unix.Connect(fd, probeSockaddr(a, port)); err != nil {
			s.close()
			return nil, fmt.Errorf("sender in the client pod: connect to %s:%d: %w", a, port, err)
		}
	}
	return s, nil
}

func (s *probeSender) close() {
	for _, fd := range s.fd {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// lastAllowed is the sequence number of the last probe sent to Allowed.
func (s *probeSender) lastAllowed() int64 { return s.allowedSent - 1 }

// send sends probe seq on socket i; a transient error (an ICMP error
// reported back, a local drop) means the probe was not sent.
func (s *probeSender) send(i int, seq int64) (bool, error) {
	binary.BigEndian.PutUint64(s.buf[:], uint64(seq))
	_, err := unix.Write(s.fd[i], s.buf[:])
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.ECONNREFUSED), errors.Is(err, unix.EHOSTUNREACH), errors.Is(err, unix.ENETUNREACH),
		errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES), errors.Is(err, unix.ENOBUFS),
		errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR):
		s.sendErrors++
		return false, nil
	default:
		return false, fmt.Errorf("send probe: %w", err)
	}
}

// loop sends until the measurement settles, fails or runs out of time. It
// closes ready once the path is in its state before the action.
func (s *probeSender) loop(ctx context.Context, mode int, res *proofResult, rcv *probeReceiver, ready chan struct{}) error {
	defer close(s.done)
	p := s.p
	s.maxNs = int64(p.MaxDuration)
	s.warmNs = int64(p.Warmup)
	warm := true
	var nextAllowed, nextDenied, now int64
	for i := 0; ; i++ {
		now = int64(time.Since(res.base))
		if now >= nextAllowed {
			ok, err := s.send(probeToAllowed, s.allowedSent)
			if err != nil {
				s.endNs, s.reason = now, err.Error()
				return err
			}
			if ok {
				s.aring[s.allowedSent&s.amask] = now
				s.allowedSent++
			}
			nextAllowed = now + int64(p.AllowedInterval)
			now = int64(time.Since(res.base))
		}
		if i&63 == 0 {
			if reason := s.stopped(ctx, now); reason != "" {
				s.endNs, s.reason = now, reason
				break
			}
			if warm {
				done, err := s.warmedUp(mode, res, rcv, now)
				if err != nil {
					s.endNs, s.reason = now, err.Error()
					return err
				}
				if done {
					warm = false
					close(ready)
				}
			} else if ret := s.returnedNs.Load(); ret >= 0 && s.settled(mode, res, rcv, ret) {
				s.endNs, s.reason = now, proofStopSettled
				break
			}
		}
		if s.behind(rcv, now) {
			// Back-pressure: the receiver is more than probeMaxLag behind (its
			// CPU is busy). Waiting leaves a gap in the probes, which the
			// send times record, rather than overflowing its queue (a lost
			// probe just before enforcement would blur the proof).
			ts := unix.NsecToTimespec(int64(10 * time.Microsecond))
			_ = unix.Nanosleep(&ts, nil)
			s.throttled += int64(time.Since(res.base)) - now
			continue
		}
		if now < nextDenied {
			continue // paced (Probe.Interval): spin on the sender's CPU
		}
		ok, err := s.send(probeToDenied, s.sent)
		if err != nil {
			s.endNs, s.reason = now, err.Error()
			return err
		}
		if ok {
			nextDenied = now + int64(p.Interval)
			res.ring[s.sent&res.mask] = now
			if s.sent == 0 {
				s.firstNs = now
			}
			s.sent++
		}
	}
	// A last probe to Allowed: once it arrived, the receiver has seen all
	// the others.
	if ok, _ := s.send(probeToAllowed, s.allowedSent); ok {
		s.aring[s.allowedSent&s.amask] = int64(time.Since(res.base))
		s.allowedSent++
	}
	return nil
}

// probeMaxLag is how far behind the sender the receiver may fall.
const probeMaxLag = 50 * time.Millisecond

// behind reports whether the oldest probe to Allowed that has not arrived
// was sent more than probeMaxLag ago.
func (s *probeSender) behind(rcv *probeReceiver, now int64) bool {
	next := rcv.max[probeToAllowed].Load() + 1
	if next >= s.allowedSent || s.allowedSent-next > int64(len(s.aring)) {
		return false
	}
	return now-s.aring[next&s.amask] > int64(probeMaxLag)
}

func (s *probeSender) stopped(ctx context.Context, now int64) string {
	switch {
	case s.abort.Load():
		return proofStopAction
	case ctx.Err() != nil:
		return proofStopCtx
	case s.startNs.Load() >= 0 && now-s.startNs.Load() >= s.maxNs:
		return proofStopMax
	}
	return ""
}

// warmedUp reports whether the path is in its state before the action:
// probes to Denied arriving (enforce), or lost for Settle and MinUnanswered
// probes (release); in both, probes to Allowed arriving.
func (s *probeSender) warmedUp(mode int, res *proofResult, rcv *probeReceiver, now int64) (bool, error) {
	denied := rcv.arrived[probeToDenied].Load()
	if mode == proofRelease && denied > 0 {
		return false, fmt.Errorf("%w: %d probes to %s arrived before the action: it is not denied", ErrNotReleased, denied, s.p.Denied)
	}
	a := rcv.max[probeToAllowed].Load()
	if a >= 0 {
		switch mode {
		case proofEnforce:
			if denied >= 10 {
				return true, nil
			}
		case proofRelease:
			if s.sent >= int64(s.p.MinUnanswered) && s.aring[a&s.amask]-s.firstNs >= int64(s.p.Settle) {
				return true, nil
			}
		}
	}
	if now >= s.warmNs {
		if a < 0 {
			return false, fmt.Errorf("no probe to the allowed address %s arrived within %v: the path does not work", s.p.Allowed, s.p.Warmup)
		}
		if mode == proofEnforce {
			return false, fmt.Errorf("probes to %s did not arrive within %v before the action: nothing to prove a filter with", s.p.Denied, s.p.Warmup)
		}
		return false, fmt.Errorf("release: not settled within %v before the action", s.p.Warmup)
	}
	return false, nil
}

// settled reports whether the measurement can stop: the receiver has seen a
// probe to Allowed sent at least Settle after the last change (the action's
// return, and the first probe to Denied lost after the last arrival, or the
// first arrival for a release).
func (s *probeSender) settled(mode int, res *proofResult, rcv *probeReceiver, ret int64) bool {
	a := rcv.max[probeToAllowed].Load()
	if a < 0 || s.allowedSent-a > int64(len(s.aring)) {
		return false
	}
	var edge int64
	switch mode {
	case proofEnforce:
		first := rcv.max[probeToDenied].Load() + 1
		if s.sent-first < int64(s.p.MinUnanswered) {
			return false
		}
		if s.sent-first <= int64(len(res.ring)) {
			edge = res.ring[first&res.mask]
		}
	case proofRelease:
		if rcv.arrived[probeToDenied].Load() == 0 {
			return false
		}
		edge = res.ring[rcv.min[probeToDenied].Load()&res.mask]
	}
	return s.aring[a&s.amask]-max(edge, ret) >= int64(s.p.Settle)
}

// probePinning places the threads of one measurement on CPUs (see Probe.NoPin).
type probePinning struct {
	on             bool
	sendSet, other unix.CPUSet
}

func newProbePinning(p Probe) probePinning {
	var all unix.CPUSet
	if p.NoPin || unix.SchedGetaffinity(0, &all) != nil || all.Count() < 2 {
		return probePinning{}
	}
	pin := probePinning{on: true}
	first := true
	for c := 0; c < len(all)*64; c++ {
		if !all.IsSet(c) {
			continue
		}
		if first {
			pin.sendSet.Set(c)
			first = false
		} else {
			pin.other.Set(c)
		}
	}
	return pin
}

// sender and others pin the calling goroutine's thread. The thread stays
// locked: the runtime discards it when the goroutine ends, so no pinned
// thread is reused.
//
// The sender's thread also gets the highest CFS weight (nice -20, where
// permitted) so that other processes on its CPU preempt it rarely and
// briefly: each preemption is a gap in the probes.
func (p probePinning) sender() {
	runtime.LockOSThread()
	_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), -20) // best effort
	p.pinTo(&p.sendSet)
}
func (p probePinning) others() { p.pinTo(&p.other) }

// receiver pins the receiver's thread away from the sender and gives it the
// highest CFS weight too: a receiver that falls behind throttles the sender
// (back-pressure), which costs resolution.
func (p probePinning) receiver() {
	runtime.LockOSThread()
	_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), -20) // best effort
	p.pinTo(&p.other)
}

func (p probePinning) pinTo(set *unix.CPUSet) {
	if !p.on {
		return
	}
	runtime.LockOSThread()
	_ = unix.SchedSetaffinity(0, set) // best effort: unpinned still works
}
