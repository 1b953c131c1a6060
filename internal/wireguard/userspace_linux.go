package wireguard

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"golang.zx2c4.com/wireguard/conn"
	"golang.zx2c4.com/wireguard/device"
	"golang.zx2c4.com/wireguard/tun"
)

// tunPath is the TUN clone device.
const tunPath = "/dev/net/tun"

// StartUserspace creates a wireguard-go device for cfg: a TUN device named
// cfg.Iface, UDP sockets on cfg.ListenPort, the peer configured over the
// UAPI; then it sets the device's address and brings it up. log (nil: no
// logs) receives wireguard-go's own lines.
//
// It must be called on a thread in the node's network namespace: in a
// process started there (`cnibench wg-node`), or on a goroutine locked
// into it (nsrun.Do). Every device and socket is made before it returns, on
// the calling thread; wireguard-go's goroutines, which may run on other
// threads, only use them. That holds because the device ignores the TUN's
// link up/down events (see staticTUN), the path by which wireguard-go would
// reopen its sockets later from another thread (the other, a new
// listen_port set on a running device, is never taken here).
func StartUserspace(cfg Config, log *slog.Logger) (*Userspace, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("wireguard-go config: %w", err)
	}
	if _, err := os.Stat(tunPath); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("wireguard-go %w: no %s (no TUN support)", ErrNotSupported, tunPath)
		}
		return nil, fmt.Errorf("wireguard-go: %w", err)
	}
	td, err := tun.CreateTUN(cfg.Iface, cfg.mtu())
	if err != nil {
		return nil, fmt.Errorf("create TUN device %s: %w", cfg.Iface, err)
	}
	dev := device.NewDevice(newStaticTUN(td, cfg.mtu()), conn.NewDefaultBind(), deviceLogger(log, cfg.Iface))
	u := &Userspace{dev: dev, name: cfg.Iface}
	fail := func(err error) (*Userspace, error) {
		u.Close()
		return nil, err
	}
	if err := dev.IpcSet(cfg.UAPI()); err != nil {
		return fail(fmt.Errorf("configure wireguard-go device %s: %w", cfg.Iface, err))
	}
	// Up opens the UDP sockets, here, on the calling thread.
	if err := dev.Up(); err != nil {
		return fail(fmt.Errorf("bring wireguard-go device %s up: %w", cfg.Iface, err))
	}
	if u.port, err = listenPort(dev); err != nil {
		return fail(fmt.Errorf("wireguard-go device %s: %w", cfg.Iface, err))
	}
	if err := linkUp(cfg); err != nil {
		return fail(err)
	}
	return u, nil
}

// staticTUN is a TUN device whose link events never reach wireguard-go.
// wireguard-go follows the TUN's link state (an "up" event opens its UDP
// sockets, "down" closes them) from a goroutine that may run on any OS
// thread: in a process whose threads are not all in the node's namespace
// the sockets would be reopened in the wrong one. StartUserspace brings the
// device up itself, on the calling thread, and Close takes it down; the MTU
// is the one set at creation (an MTU event would also be read from another
// thread, by interface name).
type staticTUN struct {
	tun.Device
	mtu    int
	events chan tun.Event
}

func newStaticTUN(d tun.Device, mtu int) *staticTUN {
	s := &staticTUN{Device: d, mtu: mtu, events: make(chan tun.Event)}
	go func() {
		for range d.Events() { // drained so that the TUN's listeners never block
		}
		close(s.events)
	}()
	return s
}

// Events never delivers an event; it is closed when the TUN is.
func (s *staticTUN) Events() <-chan tun.Event { return s.events }

// MTU is the MTU the device was created with.
func (s *staticTUN) MTU() (int, error) { return s.mtu, nil }
