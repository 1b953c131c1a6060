package client

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/sock"
)

// The icmp_echo client on Linux's ICMP datagram sockets. Each flow sends
// ICMP echo requests from an unprivileged ICMP datagram socket
// (socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP)) to the target; the kernel of
// the server's namespace answers, so the server runs no data plane, only
// the control session (CPU of both ends, the window).
//
// The kernel sets the ICMP identifier (one per socket) and the checksum;
// the client writes the ICMP type, the low 16 bits of its sequence number
// and the payload:
//
//	cookie u64 LE | seq u64 LE | stamp u64 LE (send time, Unix ns) | flow u16 BE | fill
//
// with fill byte k = byte(k) (k counted from the start of the payload), so
// a reply is matched to its request by the sequence number and the whole
// payload: a corrupted or foreign reply never counts as a transaction. The
// sizes (engine.ICMPPayloadHeader, engine.ICMPWireSize) are the
// configuration's.
const (
	icmpOffCookie = 0
	icmpOffSeq    = 8
	icmpOffStamp  = 16
	icmpOffFlow   = 24

	icmpEchoRequest4 = 8
	icmpEchoReply4   = 0
	icmpEchoRequest6 = 128
	icmpEchoReply6   = 129

	// icmpResend: without --rate a flow sends its next request when the
	// reply arrives or after this long without one, as `ping -f` does.
	icmpResend = 10 * time.Millisecond
)

// echoMsg is one echo request's identity inside its payload.
type echoMsg struct {
	Cookie, Seq uint64
	Stamp       int64
	Flow        int
}

// putEcho writes an echo request (ICMP header and payload) into b, which is
// ICMPHeader + payload bytes long with payload >= ICMPPayloadHeader.
func putEcho(b []byte, v6 bool, e echoMsg) {
	b[0], b[1] = icmpEchoRequest4, 0
	if v6 {
		b[0] = icmpEchoRequest6
	}
	binary.BigEndian.PutUint16(b[2:], 0) // checksum: the kernel's
	binary.BigEndian.PutUint16(b[4:], 0) // identifier: the kernel's
	binary.BigEndian.PutUint16(b[6:], uint16(e.Seq))
	p := b[engine.ICMPHeader:]
	binary.LittleEndian.PutUint64(p[icmpOffCookie:], e.Cookie)
	binary.LittleEndian.PutUint64(p[icmpOffSeq:], e.Seq)
	binary.LittleEndian.PutUint64(p[icmpOffStamp:], uint64(e.Stamp))
	binary.BigEndian.PutUint16(p[icmpOffFlow:], uint16(e.Flow))
	for k := engine.ICMPPayloadHeader; k < len(p); k++ {
		p[k] = byte(k)
	}
}

// echoVerdict classifies a message read from a flow's ICMP socket.
type echoVerdict int

const (
	echoMatched    echoVerdict = iota // a reply to an outstanding request
	echoLate                          // a valid reply to a request already counted lost (or a duplicate)
	echoMismatched                    // not an echo reply of this flow and session, or corrupted
)

// parseEchoReply checks that b is an echo reply of size ICMPHeader+payload
// carrying cookie and flow, with an intact fill and a sequence number
// agreeing with the ICMP header's; it returns the request's identity.
func parseEchoReply(b []byte, v6 bool, payload int, cookie uint64, flow int) (echoMsg, bool) {
	want := byte(icmpEchoReply4)
	if v6 {
		want = icmpEchoReply6
	}
	if len(b) != engine.ICMPHeader+payload || payload < engine.ICMPPayloadHeader || b[0] != want || b[1] != 0 {
		return echoMsg{}, false
	}
	p := b[engine.ICMPHeader:]
	e := echoMsg{
		Cookie: binary.LittleEndian.Uint64(p[icmpOffCookie:]),
		Seq:    binary.LittleEndian.Uint64(p[icmpOffSeq:]),
		Stamp:  int64(binary.LittleEndian.Uint64(p[icmpOffStamp:])),
		Flow:   int(binary.BigEndian.Uint16(p[icmpOffFlow:])),
	}
	if e.Cookie != cookie || e.Flow != int(uint16(flow)) || binary.BigEndian.Uint16(b[6:]) != uint16(e.Seq) {
		return echoMsg{}, false
	}
	for k := engine.ICMPPayloadHeader; k < len(p); k++ {
		if p[k] != byte(k) {
			return echoMsg{}, false
		}
	}
	return e, true
}

// echoSent is an outstanding request: when its latency starts (the
// scheduled send with --rate) and the stamp it carries.
type echoSent struct {
	t0    time.Time
	stamp int64
}

// echoBook tracks a flow's outstanding requests, oldest first.
type echoBook struct {
	out   map[uint64]echoSent
	order []uint64 // sequence numbers in send order (some already answered)
	head  int
}

func newEchoBook() *echoBook { return &echoBook{out: map[uint64]echoSent{}} }

func (b *echoBook) add(seq uint64, s echoSent) {
	b.out[seq] = s
	b.order = append(b.order, seq)
}

// answer classifies a well-formed reply: matched (and removed, with its
// send record) when outstanding with the same stamp, else late.
func (b *echoBook) answer(e echoMsg) (echoSent, echoVerdict) {
	s, ok := b.out[e.Seq]
	if !ok || s.stamp != e.Stamp {
		return echoSent{}, echoLate
	}
	delete(b.out, e.Seq)
	return s, echoMatched
}

// expire removes the requests sent before deadline and returns how many
// were still unanswered (lost).
func (b *echoBook) expire(deadline time.Time) (lost int) {
	for b.head < len(b.order) {
		seq := b.order[b.head]
		s, ok := b.out[seq]
		if ok && !s.t0.Before(deadline) {
			break
		}
		if ok {
			delete(b.out, seq)
			lost++
		}
		b.head++
	}
	if b.head > 1024 && b.head*2 > len(b.order) {
		b.order = append(b.order[:0], b.order[b.head:]...)
		b.head = 0
	}
	return lost
}

// pingGroupRange is the sysctl that lets a group open ICMP datagram sockets.
const pingGroupRange = "/proc/sys/net/ipv4/ping_group_range"

// openICMP opens an ICMP datagram socket connected to ip. When the kernel
// refuses it, the error is one line naming net.ipv4.ping_group_range and
// how to set it.
func openICMP(ip netip.Addr) (int, error) {
	family, proto := unix.AF_INET, unix.IPPROTO_ICMP
	var sa unix.Sockaddr = &unix.SockaddrInet4{Addr: ip.Unmap().As4()}
	if !ip.Unmap().Is4() {
		family, proto = unix.AF_INET6, unix.IPPROTO_ICMPV6
		sa, _ = sock.Sockaddr(ip, 0)
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
			return -1, pingGroupError(err)
		}
		return -1, fmt.Errorf("icmp_echo: open an ICMP datagram socket: %w", err)
	}
	if err := unix.Connect(fd, sa); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("icmp_echo: connect ICMP socket to %s: %w", ip, err)
	}
	return fd, nil
}

// pingGroupError explains a refused ICMP datagram socket in one line.
func pingGroupError(err error) error {
	cur := "unreadable"
	if b, rerr := os.ReadFile(pingGroupRange); rerr == nil {
		cur = strings.Join(strings.Fields(string(b)), " ")
	}
	return fmt.Errorf("icmp_echo: cannot open an ICMP datagram socket (%w): net.ipv4.ping_group_range is %q and excludes this process's group %d; allow it in the client's network namespace, e.g. sysctl -w net.ipv4.ping_group_range=\"0 2147483647\"",
		err, cur, os.Getegid())
}

// checkICMPSocket fails early, before any repeat, when this process may not
// open ICMP datagram sockets.
func checkICMPSocket(ip netip.Addr) error {
	fd, err := openICMP(ip)
	if err != nil {
		return err
	}
	unix.Close(fd)
	return nil
}

// icmpEcho is one icmp_echo flow: closed loop (the next request when the
// reply arrives, or after icmpResend without one, as `ping -f`), or open
// loop at its share of --rate with latency timed from each scheduled send.
// A request without a reply within --timeout is lost; a reply after that
// is late; anything else read from the socket is mismatched.
func (w *workload) icmpEcho(i int, ip netip.Addr, ready chan<- error) {
	fd, err := openICMP(ip)
	if err == nil {
		if err = sock.SetRcvTimeout(fd, icmpResend); err != nil {
			sock.Close(fd)
		}
	}
	if !w.started(i, fd, err, ready) {
		return
	}
	defer w.untrack(i, fd)
	v6 := !ip.Unmap().Is4()
	payload := engine.ICMPWireSize(w.cfg.ReqSize)
	req := make([]byte, engine.ICMPHeader+payload)
	resp := make([]byte, engine.ICMPHeader+payload+1) // +1: a longer message is seen as such
	f := &w.flows[i]
	p := newPacer(w.cfg.Rate / float64(w.cfg.Flows))
	book := newEchoBook()
	var seq uint64
	var lastSend time.Time
	slept := false // the last wait ran until the next send was due
	var y sock.Yielder
	for !w.stop.Load() {
		y.Yield()
		now := time.Now()
		send, t0 := len(book.out) == 0 || now.Sub(lastSend) >= icmpResend, now
		if p != nil {
			// Behind schedule, latency starts when the request was due
			// (coordinated omission, as pacer.sendTime); after sleeping
			// until it was due, when the flow woke (the timer's lateness
			// is not the network's).
			due := p.due()
			send = !now.Before(due)
			if !slept {
				t0 = due
			}
		}
		if send {
			seq++
			putEcho(req, v6, echoMsg{Cookie: w.cookie, Seq: seq, Stamp: now.UnixNano(), Flow: i})
			if p != nil {
				p.done++ // a failed send still uses its slot
			}
			if _, err := unix.Write(fd, req); err != nil {
				if !sendErrTransient(err) {
					w.fail(i, fmt.Errorf("icmp_echo send: %w", err))
					return
				}
				f.errors.Add(1)
			} else {
				book.add(seq, echoSent{t0: t0, stamp: now.UnixNano()})
				lastSend = now
				f.sent.Add(1)
				f.txBytes.Add(uint64(payload))
			}
		}
		var n int
		n, slept, err = w.icmpRecv(fd, resp, p)
		if err == nil {
			w.icmpReply(i, resp[:n], v6, payload, book)
		} else if err != unix.EINTR && !sock.IsTimeout(err) && !sendErrTransient(err) {
			w.fail(i, fmt.Errorf("icmp_echo receive: %w", err))
			return
		}
		if lost := book.expire(time.Now().Add(-w.cfg.Timeout)); lost > 0 {
			f.lost.Add(uint64(lost))
		}
	}
}

// icmpRecv waits for one message: closed loop, a blocking read bounded by
// SO_RCVTIMEO (icmpResend); open loop, until the next scheduled send
// (slept: nothing came before it was due).
func (w *workload) icmpRecv(fd int, buf []byte, p *pacer) (n int, slept bool, err error) {
	if p == nil {
		n, err = unix.Read(fd, buf)
		return n, false, err
	}
	if d := time.Until(p.due()); d > 0 {
		ts := unix.NsecToTimespec(d.Nanoseconds())
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		ready, err := unix.Ppoll(fds, &ts, nil)
		if err != nil {
			return 0, false, err
		}
		if ready == 0 {
			return 0, true, unix.EAGAIN
		}
	}
	n, _, err = unix.Recvfrom(fd, buf, unix.MSG_DONTWAIT)
	return n, false, err
}

// icmpReply accounts one message read from flow i's socket.
func (w *workload) icmpReply(i int, msg []byte, v6 bool, payload int, book *echoBook) {
	f := &w.flows[i]
	e, ok := parseEchoReply(msg, v6, payload, w.cookie, i)
	if !ok {
		f.mismatched.Add(1)
		return
	}
	s, v := book.answer(e)
	if v != echoMatched {
		f.late.Add(1)
		return
	}
	f.trans.Add(1)
	if w.measuring() {
		w.lat.record(i, time.Since(s.t0))
	}
}

// sendErrTransient: errors an ICMP socket reports for a single lost
// exchange (an ICMP error from the path, a full queue), not a broken flow.
func sendErrTransient(err error) bool {
	return err == unix.EINTR || err == unix.ENOBUFS || err == unix.ECONNREFUSED ||
		err == unix.EHOSTUNREACH || err == unix.ENETUNREACH || err == unix.EMSGSIZE
}

// due is when the pacer's next unit is scheduled.
func (p *pacer) due() time.Time {
	return p.start.Add(time.Duration(p.done / p.perSec * float64(time.Second)))
}
