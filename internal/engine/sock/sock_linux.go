package sock

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The engine's data plane uses raw, blocking sockets, one per flow, each
// driven by a goroutine locked to its own OS thread: a read blocks in the
// kernel until data arrives, exactly like netperf's recv(), so measured
// latency includes the wake-ups real services pay. Busy polling (spinning
// on a non-blocking socket) is only used when Config.BusyPoll asks for it.

// Sockaddr converts an address and port into a unix.Sockaddr.
func Sockaddr(ip netip.Addr, port int) (unix.Sockaddr, int) {
	if ip.Is4() || ip.Is4In6() {
		return &unix.SockaddrInet4{Port: port, Addr: ip.Unmap().As4()}, unix.AF_INET
	}
	sa := &unix.SockaddrInet6{Port: port, Addr: ip.As16()}
	if z := ip.Zone(); z != "" {
		if ifi, err := net.InterfaceByName(z); err == nil {
			sa.ZoneId = uint32(ifi.Index)
		}
	}
	return sa, unix.AF_INET6
}

// SetTimeouts bounds blocking reads and writes on fd to d (none when d <= 0).
func SetTimeouts(fd int, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	tv := unix.NsecToTimeval(d.Nanoseconds())
	if err := setsockoptRaw(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, unsafe.Pointer(&tv), unsafe.Sizeof(tv)); err != nil {
		return fmt.Errorf("set SO_RCVTIMEO: %w", err)
	}
	if err := setsockoptRaw(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, unsafe.Pointer(&tv), unsafe.Sizeof(tv)); err != nil {
		return fmt.Errorf("set SO_SNDTIMEO: %w", err)
	}
	return nil
}

// SetRcvTimeout bounds blocking reads only; writes block until the peer
// reads or the socket is shut down.
func SetRcvTimeout(fd int, d time.Duration) error {
	tv := unix.NsecToTimeval(d.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fmt.Errorf("set SO_RCVTIMEO: %w", err)
	}
	return nil
}

// The calls below never sleep in the kernel (socket, setsockopt, close of
// a socket without SO_LINGER), so they are made as raw system calls: the
// Go scheduler's bookkeeping around a system call (entersyscall and
// exitsyscall) costs about as much as the call itself, and tcp_crr makes
// several per transaction. A raw call holds its P only for as long as the
// kernel works on it, never while waiting for a peer, so garbage
// collection is never held up by a blocked thread.

// socketRaw opens a socket with a raw socket(2).
func socketRaw(family, typ, proto int) (int, error) {
	fd, _, errno := unix.RawSyscall(unix.SYS_SOCKET, uintptr(family), uintptr(typ), uintptr(proto))
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

// setsockoptRaw is setsockopt(2) as a raw system call.
func setsockoptRaw(fd, level, opt int, val unsafe.Pointer, size uintptr) error {
	_, _, errno := unix.RawSyscall6(unix.SYS_SETSOCKOPT, uintptr(fd), uintptr(level), uintptr(opt), uintptr(val), size, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// setsockoptIntRaw sets an int socket option with a raw setsockopt(2).
func setsockoptIntRaw(fd, level, opt, v int) error {
	x := int32(v)
	return setsockoptRaw(fd, level, opt, unsafe.Pointer(&x), 4)
}

// RecvBlock reads from a connected socket: recvfrom(2) without an address,
// through the scheduler-aware system-call path, so a thread blocked in it
// never holds up garbage collection. It is read(2) without the VFS layer
// (fdget_pos, rw_verify_area, the iov_iter set-up of vfs_read), the call
// netperf and iperf3 use. It returns the bytes read, 0 at the peer's FIN.
func RecvBlock(fd int, buf []byte) (int, error) {
	if len(buf) == 0 {
		return 0, nil
	}
	n, _, errno := unix.Syscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// DialTCP opens a blocking TCP connection. It returns the fd and the time
// connect() took.
func DialTCP(ip netip.Addr, port int, timeout time.Duration, nodelay, nonblock bool) (int, time.Duration, error) {
	sa, family := Sockaddr(ip, port)
	fd, err := socketRaw(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return -1, 0, fmt.Errorf("socket: %w", err)
	}
	if err := SetTimeouts(fd, timeout); err != nil {
		Close(fd)
		return -1, 0, err
	}
	if nodelay {
		if err := setsockoptIntRaw(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
			Close(fd)
			return -1, 0, fmt.Errorf("set TCP_NODELAY: %w", err)
		}
	}
	t0 := time.Now()
	for {
		err = unix.Connect(fd, sa)
		if err != unix.EINTR {
			break
		}
	}
	ct := time.Since(t0)
	if err != nil {
		Close(fd)
		return -1, 0, fmt.Errorf("connect to %s: %w", net.JoinHostPort(ip.String(), fmt.Sprint(port)), err)
	}
	if nonblock {
		if err := unix.SetNonblock(fd, true); err != nil {
			Close(fd)
			return -1, 0, err
		}
	}
	return fd, ct, nil
}

// ListenTCP opens a blocking TCP listener on ip:0 and returns fd and port.
func ListenTCP(ip netip.Addr, backlog int) (int, int, error) {
	sa, family := Sockaddr(ip, 0)
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return -1, 0, fmt.Errorf("socket: %w", err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return -1, 0, fmt.Errorf("bind %s: %w", ip, err)
	}
	if err := unix.Listen(fd, backlog); err != nil {
		unix.Close(fd)
		return -1, 0, fmt.Errorf("listen: %w", err)
	}
	port, err := LocalPort(fd)
	if err != nil {
		unix.Close(fd)
		return -1, 0, err
	}
	return fd, port, nil
}

// DialUDP opens a connected UDP socket.
func DialUDP(ip netip.Addr, port int, timeout time.Duration) (int, error) {
	sa, family := Sockaddr(ip, port)
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err != nil {
		return -1, fmt.Errorf("socket: %w", err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4<<20)
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
	if err := SetTimeouts(fd, timeout); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if err := unix.Connect(fd, sa); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("connect udp %s:%d: %w", ip, port, err)
	}
	return fd, nil
}

// LocalPort is the port a socket is bound to.
func LocalPort(fd int) (int, error) {
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return 0, fmt.Errorf("getsockname: %w", err)
	}
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return a.Port, nil
	case *unix.SockaddrInet6:
		return a.Port, nil
	}
	return 0, fmt.Errorf("getsockname: unexpected address family")
}

// IsTimeout reports whether err is a socket timeout (SO_RCVTIMEO/SNDTIMEO).
func IsTimeout(err error) bool {
	return errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EWOULDBLOCK)
}

// ReadFull reads exactly len(buf) bytes. spin makes it poll a
// non-blocking socket instead of blocking.
func ReadFull(fd int, buf []byte, spin bool) error {
	for off := 0; off < len(buf); {
		n, err := RecvBlock(fd, buf[off:])
		if err != nil {
			if err == unix.EINTR || (spin && IsTimeout(err)) {
				continue
			}
			return err
		}
		if n == 0 {
			return ErrEOF
		}
		off += n
	}
	return nil
}

// WriteFull writes all of buf.
func WriteFull(fd int, buf []byte, spin bool) error {
	for off := 0; off < len(buf); {
		n, err := unix.Write(fd, buf[off:])
		if err != nil {
			if err == unix.EINTR || (spin && IsTimeout(err)) {
				continue
			}
			return err
		}
		off += n
	}
	return nil
}

// ErrEOF: the peer closed the connection before a whole message came.
var ErrEOF = errors.New("connection closed by peer")

// SmallWrite is the largest write that surely fits an idle socket's send
// buffer (the kernel's minimum is 4 KiB plus overhead).
const SmallWrite = 4096

// sendNoWait makes one non-blocking send (MSG_DONTWAIT) without the Go
// scheduler's system-call bookkeeping, which would otherwise cost about as
// much as the send itself on loopback. MSG_DONTWAIT is what makes the raw
// call safe: it cannot sleep in the kernel whatever the socket's mode or the
// peer does, so the thread never blocks where the scheduler (and the garbage
// collector's stop-the-world) cannot see it. It returns the bytes sent, or
// EAGAIN when the send buffer is full.
func sendNoWait(fd int, buf []byte) (int, unix.Errno) {
	n, _, errno := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)),
		unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, 0, 0)
	return int(n), errno
}

// SendSmall sends as much of a small message (a request or response of a
// transactional test, at most SmallWrite bytes) as fits the send buffer
// right now, never blocking. It returns how many bytes were sent; the caller
// finishes the rest, if any, with a normal blocking write.
func SendSmall(fd int, buf []byte) (int, error) {
	if len(buf) > SmallWrite {
		return 0, nil
	}
	off := 0
	for off < len(buf) {
		n, errno := sendNoWait(fd, buf[off:])
		switch errno {
		case 0:
			off += n
		case unix.EINTR:
		case unix.EAGAIN:
			return off, nil
		default:
			return off, errno
		}
	}
	return off, nil
}

// WriteSmall writes a request or response of a transactional test: one
// non-blocking raw send (one message is in flight per flow, so it nearly
// always fits), then a normal, scheduler-aware blocking write for whatever
// did not fit.
func WriteSmall(fd int, buf []byte) error {
	off, err := SendSmall(fd, buf)
	if err != nil {
		return err
	}
	if off == len(buf) {
		return nil
	}
	return WriteFull(fd, buf[off:], false)
}

// PathMTU returns the path MTU the kernel uses for a connected socket.
func PathMTU(fd int, v6 bool) (int, error) {
	if v6 {
		return unix.GetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MTU)
	}
	return unix.GetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MTU)
}

// Shutdown wakes any thread blocked on fd (accept, read, recvfrom).
func Shutdown(fd int) { _ = unix.Shutdown(fd, unix.SHUT_RDWR) }

// Close closes a descriptor with a raw close(2): the engine never sets
// SO_LINGER, so closing a socket never sleeps.
func Close(fd int) { _, _, _ = unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0) }
