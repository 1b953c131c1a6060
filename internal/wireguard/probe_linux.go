package wireguard

import (
	"fmt"

	"golang.zx2c4.com/wireguard/tun"

	"github.com/cnibench/cnibench/internal/nsrun"
)

// ProbeUserspace reports whether the userspace implementation can run
// here: a TUN device can be created (in a scratch network namespace). It
// returns nil or an error wrapping ErrNotSupported with the reason.
func ProbeUserspace() error {
	err := nsrun.Scratch(func() error {
		d, err := tun.CreateTUN("cnbwgprobe0", DefaultMTU)
		if err != nil {
			return err
		}
		return d.Close()
	})
	if err != nil {
		return fmt.Errorf("%w: userspace WireGuard needs a TUN device (/dev/net/tun): %w", ErrNotSupported, err)
	}
	return nil
}
