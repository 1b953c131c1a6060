package wireguard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"

	"golang.zx2c4.com/wireguard/device"
)

// userspaceModule is wireguard-go's module path.
const userspaceModule = "golang.zx2c4.com/wireguard"

// Userspace is a running wireguard-go device (StartUserspace).
type Userspace struct {
	dev       *device.Device
	name      string
	port      int
	closeOnce sync.Once
}

// Name is the device's interface name.
func (u *Userspace) Name() string { return u.name }

// Port is the UDP port the device listens on.
func (u *Userspace) Port() int { return u.port }

// Done is closed once the device is closed, by Close or because it failed.
func (u *Userspace) Done() <-chan struct{} { return u.dev.Wait() }

// Close closes the device: its UDP sockets and its TUN device, which the
// kernel removes with its last descriptor. It may be called more than once.
func (u *Userspace) Close() error {
	u.closeOnce.Do(u.dev.Close)
	return nil
}

// RunUserspace runs a wireguard-go device for cfg until ctx ends, then
// closes it. It must run where StartUserspace may (in the node's network
// namespace); log may be nil.
func RunUserspace(ctx context.Context, cfg Config, log *slog.Logger) error {
	u, err := StartUserspace(cfg, log)
	if err != nil {
		return err
	}
	defer u.Close()
	select {
	case <-ctx.Done():
		return nil
	case <-u.Done():
		return fmt.Errorf("wireguard-go device %s closed unexpectedly", u.Name())
	}
}

// UserspaceVersion is the version of wireguard-go built into this binary
// (its module version), or "unknown" (as in test binaries, which record no
// dependencies).
func UserspaceVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, d := range bi.Deps {
		if d.Path != userspaceModule {
			continue
		}
		if d.Replace != nil {
			d = d.Replace
		}
		if d.Version == "" || d.Version == "(devel)" {
			return "devel"
		}
		return d.Version
	}
	return "unknown"
}

// deviceLogger sends wireguard-go's logs to log: its verbose lines at
// debug level, its errors as warnings.
func deviceLogger(log *slog.Logger, iface string) *device.Logger {
	if log == nil {
		return &device.Logger{Verbosef: device.DiscardLogf, Errorf: device.DiscardLogf}
	}
	log = log.With("iface", iface, "impl", LabelUserspace)
	return &device.Logger{
		Verbosef: func(format string, args ...any) { log.Debug(fmt.Sprintf(format, args...)) },
		Errorf:   func(format string, args ...any) { log.Warn(fmt.Sprintf(format, args...)) },
	}
}

// listenPort reads the port the device listens on from its UAPI state.
func listenPort(dev *device.Device) (int, error) {
	state, err := dev.IpcGet()
	if err != nil {
		return 0, fmt.Errorf("read device state: %w", err)
	}
	for _, line := range strings.Split(state, "\n") {
		if v, ok := strings.CutPrefix(line, "listen_port="); ok {
			p, err := strconv.Atoi(v)
			if err != nil {
				return 0, fmt.Errorf("device state: listen_port=%q: %w", v, err)
			}
			return p, nil
		}
	}
	return 0, errors.New("device state has no listen_port (not listening)")
}
