package lbnet

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// synFloodTick is how often the flood's sender catches up with its
// schedule (Go's timers are not finer than tens of microseconds).
const synFloodTick = 500 * time.Microsecond

// SYNFlood sends TCP SYNs from ClientFW (ClientFWIP, random source
// ports and sequence numbers) to VIP:Port at rate a second until ctx
// ends, through a raw socket made in ClientFW's namespace, and returns
// what it sent. The sender is one goroutine on a thread of its own, pinned
// to cpu when cpu >= 0; every synFloodTick it sends what the schedule
// (rate × elapsed) says is due, so a sender that cannot keep up sends as
// fast as it can and Achieved says how fast that was. The socket is closed
// on return.
func (l *LB) SYNFlood(ctx context.Context, rate, cpu int) (SYNFloodResult, error) {
	res := SYNFloodResult{Rate: rate}
	if rate <= 0 {
		return res, fmt.Errorf("syn flood: rate %d, want > 0", rate)
	}
	var fd int
	if err := l.clientFW.Do(func() (err error) {
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
		return err
	}); err != nil {
		return res, fmt.Errorf("syn flood: raw socket in %s: %w", l.clientFW.Name, err)
	}
	defer unix.Close(fd)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked when pinned: the thread exits with the goroutine
		if cpu >= 0 {
			var set unix.CPUSet
			set.Set(cpu)
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				done <- fmt.Errorf("pin the sender to CPU %d: %w", cpu, err)
				return
			}
		} else {
			defer runtime.UnlockOSThread()
		}
		done <- synFloodLoop(ctx, fd, rate, &res)
	}()
	err := <-done
	if err != nil {
		return res, fmt.Errorf("syn flood from %s: %w", l.clientFW.Name, err)
	}
	return res, nil
}

// synFloodLoop sends on schedule until ctx ends, filling res.
func synFloodLoop(ctx context.Context, fd, rate int, res *SYNFloodResult) error {
	to := &unix.SockaddrInet4{Addr: VIP.As4()}
	pkt := make([]byte, 40)
	start := time.Now()
	defer func() { res.Duration = time.Since(start) }()
	for ctx.Err() == nil {
		due := uint64(time.Since(start).Seconds() * float64(rate))
		// At most one tick's worth of catching up past the schedule's
		// budget per check, so that ctx's end stops it promptly.
		for n := 0; res.Sent+res.SendErrors < due && n < 4096; n++ {
			synPacket(pkt, ClientFWIP.As4(), VIP.As4(), uint16(1024+rand.IntN(64512)), Port, rand.Uint32())
			if err := unix.Sendto(fd, pkt, 0, to); err != nil {
				if errors.Is(err, unix.ENOBUFS) || errors.Is(err, unix.EAGAIN) {
					res.SendErrors++
					continue
				}
				return fmt.Errorf("send: %w", err)
			}
			res.Sent++
		}
		time.Sleep(synFloodTick)
	}
	return nil
}

// synPacket writes an IPv4 + TCP SYN (40 bytes, no options) into b: the
// kernel fills the IP checksum and ID of a raw IPPROTO_RAW socket's
// packet; the TCP checksum is computed here.
func synPacket(b []byte, src, dst [4]byte, sport, dport uint16, seq uint32) {
	clear(b[:40])
	b[0] = 0x45 // IPv4, 5 words
	binary.BigEndian.PutUint16(b[2:], 40)
	b[6] = 0x40 // don't fragment
	b[8] = 64   // TTL
	b[9] = unix.IPPROTO_TCP
	copy(b[12:16], src[:])
	copy(b[16:20], dst[:])
	binary.BigEndian.PutUint16(b[10:], ipChecksum(b[:20], 0))
	t := b[20:40]
	binary.BigEndian.PutUint16(t[0:], sport)
	binary.BigEndian.PutUint16(t[2:], dport)
	binary.BigEndian.PutUint32(t[4:], seq)
	t[12] = 5 << 4 // data offset
	t[13] = 0x02   // SYN
	binary.BigEndian.PutUint16(t[14:], 64240)
	// Pseudo-header: addresses, protocol, TCP length.
	var ph uint32
	for i := 0; i < 4; i += 2 {
		ph += uint32(binary.BigEndian.Uint16(src[i:])) + uint32(binary.BigEndian.Uint16(dst[i:]))
	}
	ph += unix.IPPROTO_TCP + 20
	binary.BigEndian.PutUint16(t[16:], ipChecksum(t, ph))
}

// ipChecksum is the Internet checksum of b, starting from the partial sum
// initial.
func ipChecksum(b []byte, initial uint32) uint16 {
	sum := initial
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
