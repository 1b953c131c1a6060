package capture

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ethtoolGGRO is the legacy ethtool command that reads NETIF_F_GRO
// ("rx-gro").
const ethtoolGGRO = 0x2b

// rxGRO reports whether iface, in the network namespace of the socket fd,
// merges received packets with GRO before the capture sees them (a veth
// with rx-gro on: the lab's NIC-like wire). Its packet counters then count
// more packets than the capture sees frames.
func rxGRO(fd int, iface string) (bool, error) {
	value := struct{ cmd, data uint32 }{cmd: ethtoolGGRO}
	var ifr struct {
		name [unix.IFNAMSIZ]byte
		data uintptr
		_    [16]byte
	}
	copy(ifr.name[:unix.IFNAMSIZ-1], iface)
	ifr.data = uintptr(unsafe.Pointer(&value))
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	runtime.KeepAlive(&value)
	if errno != 0 {
		return false, fmt.Errorf("read rx-gro of %s: %w", iface, errno)
	}
	return value.data != 0, nil
}
