package capture

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Capture is a running capture on one interface (Start, Stop).
type Capture struct {
	fd    int
	ring  []byte
	block int
	do    func(func() error) error
	iface string
	opts  Options
	t     *tally

	t0       time.Time
	start    linkCounters
	stopping atomic.Bool
	stopped  atomic.Bool
	done     chan struct{}
	// The reader's, read by Stop after done: its error and the kernel's
	// statistics so far (read every statsEvery: they are 32-bit counters
	// that reading resets).
	err     error
	packets uint64
	drops   uint64
	cpu     time.Duration
}

// Start captures every frame that iface sends or receives, from its
// Ethernet header, for SnapLen bytes, and scans each for markers (each a
// whole copy: engine.FillPayload repeats the marker so that any frame with
// 200 bytes of payload holds one). The socket (AF_PACKET, SOCK_RAW,
// ETH_P_ALL, a TPACKET_V3 ring) is opened inside do, which runs its
// function in iface's network namespace (lab.NS.Do); the socket keeps that
// namespace. A nil do means the caller's namespace. Stop ends it.
func Start(do func(func() error) error, iface string, markers [][]byte, o Options) (*Capture, error) {
	o, err := o.resolve()
	if err != nil {
		return nil, fmt.Errorf("capture on %s: %w", iface, err)
	}
	if err := checkMarkers(markers); err != nil {
		return nil, fmt.Errorf("capture on %s: %w", iface, err)
	}
	if do == nil {
		do = func(f func() error) error { return f() }
	}
	c := &Capture{fd: -1, block: o.BlockSize, do: do, iface: iface, opts: o, done: make(chan struct{}),
		t: newTally(cloneMarkers(markers), preferredPorts(o.EncProtos))}
	c.t.filter = o.Filter
	err = do(func() error {
		ifindex, mtu, err := ethernetLink(iface)
		if err != nil {
			return err
		}
		if err := c.open(ifindex); err != nil {
			return err
		}
		if c.t.gro, err = rxGRO(c.fd, iface); err != nil {
			return err
		}
		c.t.mtu = mtu
		c.t0 = time.Now()
		c.start, err = readCounters(iface)
		return err
	})
	if err != nil {
		c.release()
		return nil, fmt.Errorf("capture on %s: %w", iface, err)
	}
	go c.read()
	return c, nil
}

// open creates the socket, its ring and its snap-length filter, and binds
// it to ifindex last, so that frames of other interfaces never reach it.
func (c *Capture) open(ifindex int) error {
	// Protocol 0: no frame is delivered before bind names the interface.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			return fmt.Errorf("open a packet socket: %w (needs CAP_NET_RAW)", err)
		}
		return fmt.Errorf("open a packet socket: %w", err)
	}
	c.fd = fd
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V3); err != nil {
		return fmt.Errorf("set TPACKET_V3: %w", err)
	}
	if err := setSnapLen(fd, c.opts.SnapLen); err != nil {
		return fmt.Errorf("attach the snap-length filter: %w", err)
	}
	nblocks := c.opts.RingSize / c.block
	const frameSize = 2048 // only checked by the kernel with TPACKET_V3
	req := unix.TpacketReq3{
		Block_size:     uint32(c.block),
		Block_nr:       uint32(nblocks),
		Frame_size:     frameSize,
		Frame_nr:       uint32(c.block / frameSize * nblocks),
		Retire_blk_tov: retireMs,
	}
	if err := unix.SetsockoptTpacketReq3(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		return fmt.Errorf("set up a %d-byte PACKET_RX_RING: %w", nblocks*c.block, err)
	}
	ring, err := unix.Mmap(fd, 0, nblocks*c.block, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("map the %d-byte ring: %w", nblocks*c.block, err)
	}
	c.ring = ring
	sa := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifindex}
	if err := unix.Bind(fd, sa); err != nil {
		return fmt.Errorf("bind the packet socket to %s: %w", c.iface, err)
	}
	return nil
}

// retireMs is how long the kernel fills a ring block before handing it
// over part full; pollMs how long the reader waits for one at a time, and
// drainPolls how many empty waits after Stop end the capture.
const (
	retireMs   = 10
	pollMs     = retireMs
	drainPolls = 3
	statsEvery = time.Second
)

// read scans the blocks the kernel hands over, in ring order, until Stop
// asks it to end and no block came for drainPolls waits.
func (c *Capture) read() {
	defer close(c.done)
	// On a thread of its own, whose CPU time is the reader's.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0 := threadCPU() // the thread may have run other goroutines before
	defer func() { c.cpu = threadCPU() - cpu0 }()
	nblocks := len(c.ring) / c.block
	pfd := []unix.PollFd{{Fd: int32(c.fd), Events: unix.POLLIN | unix.POLLERR}}
	idle := 0
	next := time.Now().Add(statsEvery)
	for cur := 0; ; {
		if now := time.Now(); now.After(next) {
			c.readStats()
			next = now.Add(statsEvery)
		}
		blk := c.ring[cur*c.block : (cur+1)*c.block]
		status := (*uint32)(unsafe.Pointer(&blk[blkStatus]))
		if atomic.LoadUint32(status)&unix.TP_STATUS_USER == 0 {
			if c.stopping.Load() {
				if idle++; idle > drainPolls {
					return
				}
			}
			if _, err := unix.Poll(pfd, pollMs); err != nil && err != unix.EINTR {
				c.err = fmt.Errorf("wait for the ring: %w", err)
				return
			}
			continue
		}
		idle = 0
		if err := walkBlock(blk, c.t.add); err != nil && c.err == nil {
			c.err = err
		}
		atomic.StoreUint32(status, unix.TP_STATUS_KERNEL)
		cur = (cur + 1) % nblocks
	}
}

// Stop ends the capture: it reads the interface's counters, scans what
// the ring still holds, reads the kernel's statistics and closes the
// socket. The Result is filled as far as possible even with an error;
// Result.Check says whether the capture kept up.
func (c *Capture) Stop() (Result, error) {
	if !c.stopped.CompareAndSwap(false, true) {
		return Result{}, fmt.Errorf("capture on %s: already stopped", c.iface)
	}
	r := Result{Iface: c.iface, SnapLen: c.opts.SnapLen, RxGRO: c.t.gro, EncProtos: c.opts.EncProtos,
		MinEncFrames: c.opts.MinEncFrames, MinCoverage: c.opts.MinCoverage}
	var end linkCounters
	cerr := c.do(func() error {
		var err error
		end, err = readCounters(c.iface)
		return err
	})
	r.Duration = time.Since(c.t0)
	if cerr != nil {
		r.IfaceErr = cerr.Error()
	} else {
		r.IfaceRx, r.IfaceTx = end.rx-c.start.rx, end.tx-c.start.tx
	}
	// Take no more frames before the reader's last drain: a frame that
	// arrived between that drain and the statistics would be counted as
	// offered but never scanned. The kernel counts no frame its filter
	// refuses.
	if err := setSnapLen(c.fd, 0); err != nil && c.err == nil {
		c.err = fmt.Errorf("close the capture's intake: %w", err)
	}
	c.stopping.Store(true)
	<-c.done
	c.readStats()
	c.t.fill(&r)
	r.ReaderCPU = c.cpu
	r.SocketPackets, r.Dropped = c.packets, c.drops
	err := errors.Join(c.err, c.release())
	if err != nil {
		return r, fmt.Errorf("capture on %s: %w", c.iface, err)
	}
	return r, nil
}

// setSnapLen attaches a classic BPF filter that accepts every frame but
// only its first n bytes, as libpcap does (the kernel copies no more into
// the ring, whatever the size of a GSO or GRO packet); n = 0 refuses every
// frame.
func setSnapLen(fd, n int) error {
	filter := []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: uint32(n)}}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	return unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &prog)
}

// readStats adds the kernel's PACKET_STATISTICS since the last call
// (frames offered to the socket, drops included, and drops); a failure is
// kept as the reader's error.
func (c *Capture) readStats() {
	st, err := unix.GetsockoptTpacketStatsV3(c.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	if err != nil {
		if c.err == nil {
			c.err = fmt.Errorf("read PACKET_STATISTICS: %w", err)
		}
		return
	}
	c.packets += uint64(st.Packets)
	c.drops += uint64(st.Drops)
}

// release unmaps the ring and closes the socket.
func (c *Capture) release() error {
	var errs []error
	if c.ring != nil {
		if err := unix.Munmap(c.ring); err != nil {
			errs = append(errs, fmt.Errorf("unmap the ring: %w", err))
		}
		c.ring = nil
	}
	if c.fd >= 0 {
		if err := unix.Close(c.fd); err != nil {
			errs = append(errs, fmt.Errorf("close the packet socket: %w", err))
		}
		c.fd = -1
	}
	return errors.Join(errs...)
}

// threadCPU is the CPU time (user and system) of the calling thread.
func threadCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
