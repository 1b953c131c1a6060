package lab

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ethtool feature control through the SIOCETHTOOL ioctl (ETHTOOL_GFEATURES /
// ETHTOOL_SFEATURES with the ETH_SS_FEATURES string set), the interface
// `ethtool -k/-K` uses. The socket must be created in the device's network
// namespace (see NS.Do).

const (
	ethGStringLen = 32
	ethSSFeatures = 4 // ETH_SS_FEATURES
)

// ethtoolIfreq is struct ifreq with ifr_data: the name, then a pointer.
type ethtoolIfreq struct {
	name [unix.IFNAMSIZ]byte
	data uintptr
	_    [16]byte
}

func ethtoolIoctl(fd int, ifName string, buf []byte) error {
	var ifr ethtoolIfreq
	copy(ifr.name[:unix.IFNAMSIZ-1], ifName)
	ifr.data = uintptr(unsafe.Pointer(&buf[0]))
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	runtime.KeepAlive(buf)
	if errno != 0 {
		return errno
	}
	return nil
}

// ethtoolFeatures is a device's feature list: names and active state.
type ethtoolFeatures struct {
	names  []string
	active []bool
	fixed  []bool // never_changed
}

func ethtoolFeatureNames(fd int, ifName string) ([]string, error) {
	// struct ethtool_sset_info { u32 cmd; u32 reserved; u64 sset_mask; u32 data[1]; }
	info := make([]byte, 20)
	binary.NativeEndian.PutUint32(info[0:], unix.ETHTOOL_GSSET_INFO)
	binary.NativeEndian.PutUint64(info[8:], 1<<ethSSFeatures)
	if err := ethtoolIoctl(fd, ifName, info); err != nil {
		return nil, fmt.Errorf("ETHTOOL_GSSET_INFO on %s: %w", ifName, err)
	}
	if binary.NativeEndian.Uint64(info[8:]) == 0 {
		return nil, fmt.Errorf("ETHTOOL_GSSET_INFO on %s: no feature string set", ifName)
	}
	n := int(binary.NativeEndian.Uint32(info[16:]))
	// struct ethtool_gstrings { u32 cmd; u32 string_set; u32 len; u8 data[]; }
	gs := make([]byte, 12+n*ethGStringLen)
	binary.NativeEndian.PutUint32(gs[0:], unix.ETHTOOL_GSTRINGS)
	binary.NativeEndian.PutUint32(gs[4:], ethSSFeatures)
	binary.NativeEndian.PutUint32(gs[8:], uint32(n))
	if err := ethtoolIoctl(fd, ifName, gs); err != nil {
		return nil, fmt.Errorf("ETHTOOL_GSTRINGS on %s: %w", ifName, err)
	}
	names := make([]string, n)
	for i := range names {
		s := gs[12+i*ethGStringLen : 12+(i+1)*ethGStringLen]
		if j := bytes.IndexByte(s, 0); j >= 0 {
			s = s[:j]
		}
		names[i] = string(s)
	}
	return names, nil
}

func getFeatures(fd int, ifName string) (*ethtoolFeatures, error) {
	names, err := ethtoolFeatureNames(fd, ifName)
	if err != nil {
		return nil, err
	}
	blocks := (len(names) + 31) / 32
	// struct ethtool_gfeatures { u32 cmd; u32 size; {available, requested, active, never_changed}[size] }
	buf := make([]byte, 8+blocks*16)
	binary.NativeEndian.PutUint32(buf[0:], unix.ETHTOOL_GFEATURES)
	binary.NativeEndian.PutUint32(buf[4:], uint32(blocks))
	if err := ethtoolIoctl(fd, ifName, buf); err != nil {
		return nil, fmt.Errorf("ETHTOOL_GFEATURES on %s: %w", ifName, err)
	}
	f := &ethtoolFeatures{names: names, active: make([]bool, len(names)), fixed: make([]bool, len(names))}
	for i := range names {
		b := 8 + (i/32)*16
		bit := uint32(1) << (i % 32)
		f.active[i] = binary.NativeEndian.Uint32(buf[b+8:])&bit != 0
		f.fixed[i] = binary.NativeEndian.Uint32(buf[b+12:])&bit != 0
	}
	return f, nil
}

// setFeatures requests the features in want (by name) on or off. Names the
// device does not have are an error; fixed features are left alone unless
// their requested state differs from the active one (then an error).
func setFeatures(fd int, ifName string, want map[string]bool) error {
	f, err := getFeatures(fd, ifName)
	if err != nil {
		return err
	}
	blocks := (len(f.names) + 31) / 32
	// struct ethtool_sfeatures { u32 cmd; u32 size; {valid, requested}[size] }
	buf := make([]byte, 8+blocks*8)
	binary.NativeEndian.PutUint32(buf[0:], unix.ETHTOOL_SFEATURES)
	binary.NativeEndian.PutUint32(buf[4:], uint32(blocks))
	found := 0
	for i, name := range f.names {
		on, ok := want[name]
		if !ok {
			continue
		}
		found++
		if f.fixed[i] {
			if f.active[i] != on {
				return fmt.Errorf("feature %s of %s is fixed %v", name, ifName, f.active[i])
			}
			continue
		}
		b := 8 + (i/32)*8
		bit := uint32(1) << (i % 32)
		binary.NativeEndian.PutUint32(buf[b:], binary.NativeEndian.Uint32(buf[b:])|bit)
		if on {
			binary.NativeEndian.PutUint32(buf[b+4:], binary.NativeEndian.Uint32(buf[b+4:])|bit)
		}
	}
	if found != len(want) {
		return fmt.Errorf("set features on %s: %d of %d requested features exist", ifName, found, len(want))
	}
	// A positive return (ETHTOOL_F_WISH) means some request could not be
	// met; the caller checks the outcome with getFeatures.
	if err := ethtoolIoctl(fd, ifName, buf); err != nil {
		return fmt.Errorf("ETHTOOL_SFEATURES on %s: %w", ifName, err)
	}
	return nil
}

// Features returns the active ethtool features of a device in ns, by name
// (as `ethtool -k` lists them).
func (n *NS) Features(ifName string) (map[string]bool, error) {
	var out map[string]bool
	err := n.ethtool(func(fd int) error {
		f, err := getFeatures(fd, ifName)
		if err != nil {
			return err
		}
		out = make(map[string]bool, len(f.names))
		for i, name := range f.names {
			out[name] = f.active[i]
		}
		return nil
	})
	return out, err
}

// SetFeatures switches ethtool features of a device in ns on or off and
// checks that the device took them.
func (n *NS) SetFeatures(ifName string, want map[string]bool) error {
	return n.ethtool(func(fd int) error {
		if err := setFeatures(fd, ifName, want); err != nil {
			return err
		}
		f, err := getFeatures(fd, ifName)
		if err != nil {
			return err
		}
		for i, name := range f.names {
			if on, ok := want[name]; ok && f.active[i] != on {
				return fmt.Errorf("feature %s of %s is %v after asking for %v", name, ifName, f.active[i], on)
			}
		}
		return nil
	})
}

// ethtool runs f with an AF_INET datagram socket created inside ns.
func (n *NS) ethtool(f func(fd int) error) error {
	var fd int
	err := n.Do(func() error {
		var err error
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return fmt.Errorf("ethtool socket in %s: %w", n.Name, err)
	}
	defer unix.Close(fd)
	if err := f(fd); err != nil {
		return fmt.Errorf("%s: %w", n.Name, err)
	}
	return nil
}
