package ipsec

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"time"
)

// UserspaceConfig is one node's side of a userspace ESP tunnel run by
// strongSwan's charon with the kernel-libipsec plugin: IKEv2 with a
// pre-shared key between Local and Remote, one CHILD_SA in tunnel mode for
// LocalNet <-> RemoteNet, ESP (always in UDP, port 4500) done by charon
// behind a TUN device, ipsec0. libipsec fixes that device's MTU at 1400
// bytes (it sizes its read buffer from the MTU it saw at creation, so
// raising it afterwards truncates packets): inner packets are at most
// 1400 bytes, below PodMTU(wireMTU-UDPEncapOverhead, Alg).
type UserspaceConfig struct {
	// Name names the IKE connection and its CHILD_SA; "" = "cnibench".
	// Letters, digits, '-' and '_' only.
	Name string
	// Local and Remote are the node (wire) addresses, IKE and ESP
	// endpoints; they are also the IKE identities.
	Local, Remote netip.Addr
	// LocalNet and RemoteNet are the pod CIDRs (the traffic selectors).
	LocalNet, RemoteNet netip.Prefix
	// Alg is the ESP algorithm; IKE itself always uses AES-GCM-128,
	// PRF-HMAC-SHA-256 and ECP-256.
	Alg Algorithm
	// PSK is the pre-shared key, the same on both nodes, at least 32
	// bytes (NewPSK). It is written, hex-encoded, only to a file readable
	// by root in Dir.
	PSK []byte
	// Initiate makes this side start the IKE negotiation; exactly one of
	// the two sides should.
	Initiate bool
	// Dir holds this instance's configuration, vici socket, log and pid
	// file. "" = a new temporary directory, removed when stopped.
	Dir string
	// Timeout bounds StartUserspace when its context has no deadline
	// (0 = 30 s).
	Timeout time.Duration
}

// Userspace tunnel defaults.
const (
	defaultConnName         = "cnibench"
	defaultUserspaceTimeout = 30 * time.Second
	minPSKLen               = 32
	// maxDirLen leaves room in sun_path (108 bytes) for the vici
	// socket's file name.
	maxDirLen = 90
)

// NewPSK returns a random pre-shared key for a userspace tunnel (32 bytes
// from crypto/rand): one per run, never stored beyond the run's
// configuration directories.
func NewPSK() ([]byte, error) {
	k := make([]byte, minPSKLen)
	if _, err := rand.Read(k); err != nil {
		return nil, fmt.Errorf("read random PSK: %w", err)
	}
	return k, nil
}

func (c UserspaceConfig) name() string {
	if c.Name == "" {
		return defaultConnName
	}
	return c.Name
}

func (c UserspaceConfig) timeout() time.Duration {
	if c.Timeout <= 0 {
		return defaultUserspaceTimeout
	}
	return c.Timeout
}

// Validate checks c (Dir may still be empty).
func (c UserspaceConfig) Validate() error {
	// The tunnel rules are the kernel tunnel's, minus SPIs and keys,
	// which IKE negotiates.
	t := Tunnel{Local: c.Local, Remote: c.Remote, LocalNet: c.LocalNet, RemoteNet: c.RemoteNet,
		Alg: c.Alg, SPIOut: minSPI, SPIIn: minSPI + 1, ReqID: 1}
	t.KeyOut, t.KeyIn = make([]byte, KeyLen(c.Alg)), make([]byte, KeyLen(c.Alg))
	if len(t.KeyIn) > 0 {
		t.KeyIn[0] = 1
	}
	var errs []error
	if err := t.Validate(); err != nil {
		errs = append(errs, err)
	}
	if n := c.name(); strings.Trim(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" || len(n) > 32 {
		errs = append(errs, fmt.Errorf("name %q: at most 32 letters, digits, '-' or '_'", n))
	}
	if len(c.PSK) < minPSKLen {
		errs = append(errs, fmt.Errorf("PSK of %d bytes, want at least %d", len(c.PSK), minPSKLen))
	}
	if c.Dir != "" && (!filepath.IsAbs(c.Dir) || len(c.Dir) > maxDirLen || strings.ContainsAny(c.Dir, "\" \t\n{}#")) {
		errs = append(errs, fmt.Errorf("dir %q: must be an absolute path of at most %d bytes without spaces, quotes, braces, '#' or newlines", c.Dir, maxDirLen))
	}
	return errors.Join(errs...)
}

// Files in a userspace instance's directory.
const (
	strongswanConfFile = "strongswan.conf"
	swanctlConfFile    = "swanctl.conf"
	viciSocketFile     = "charon.vici"
	charonLogFile      = "charon.log"
	// runSubdir is bind-mounted on /run in charon's private mount
	// namespace: charon's pid file (/var/run/charon.pid, fixed at build
	// time) lands there, apart from the host's and the other instance's.
	runSubdir = "run"
)

// charonPlugins are the plugins charon loads, in order of preference.
// kernel-libipsec must come before kernel-netlink so that it, not the
// kernel, provides the IPsec backend; kernel-netlink still handles
// addresses and routes (it cannot be marked critical: its own IPsec backend
// then counts as a failed critical feature). The ones marked '!' are
// critical: charon refuses to start without them instead of running a
// tunnel that cannot work. aesni, gcm, aes, sha2 and hmac only add
// implementations openssl also has.
const charonPlugins = "random! nonce! aesni aes sha2 hmac gcm openssl! kdf! " +
	"kernel-libipsec! kernel-netlink socket-default! vici!"

// requiredPlugins are the plugins ProbeUserspace checks for.
const requiredPlugins = "random nonce openssl kdf kernel-libipsec kernel-netlink socket-default vici"

// strongswanConf renders the strongswan.conf of the instance in dir: only
// the plugins it needs, its own vici socket and log file, no syslog, no
// virtual IPs; routes into the TUN device are on (install_routes), which
// is how libipsec gets the traffic.
func strongswanConf(dir string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `# Written by cnibench (internal/ipsec): one userspace ESP instance.
charon {
	load = %s
	install_routes = yes
	install_virtual_ip = no
	plugins {
		vici {
			socket = unix://%s
		}
	}
	syslog {
	}
	filelog {
		cnibench {
			path = %s
			append = no
			flush_line = yes
			time_format = %%T
			default = 1
		}
	}
}
swanctl {
	load = pem
	socket = unix://%s
}
`, charonPlugins, filepath.Join(dir, viciSocketFile), filepath.Join(dir, charonLogFile), filepath.Join(dir, viciSocketFile))
	return []byte(b.String())
}

// swanctlConf renders the connection and its secret.
func swanctlConf(c UserspaceConfig) ([]byte, error) {
	p, err := c.Alg.params()
	if err != nil {
		return nil, err
	}
	// The secret is keyed by both identities so that either side finds it.
	ids := [2]netip.Addr{c.Local, c.Remote}
	if ids[1].Less(ids[0]) {
		ids[0], ids[1] = ids[1], ids[0]
	}
	var b strings.Builder
	fmt.Fprintf(&b, `# Written by cnibench (internal/ipsec). Holds a pre-shared key: mode 0600.
connections {
	%[1]s {
		version = 2
		local_addrs = %[2]s
		remote_addrs = %[3]s
		proposals = aes128gcm16-prfsha256-ecp256
		# No DPD or rekeying during a benchmark.
		dpd_delay = 0
		rekey_time = 0
		local {
			auth = psk
			id = %[2]s
		}
		remote {
			auth = psk
			id = %[3]s
		}
		children {
			%[1]s {
				local_ts = %[4]s
				remote_ts = %[5]s
				mode = tunnel
				esp_proposals = %[6]s
				rekey_time = 0
				start_action = none
			}
		}
	}
}
secrets {
	ike-%[1]s {
		id-a = %[7]s
		id-b = %[8]s
		secret = 0x%[9]s
	}
}
`, c.name(), c.Local, c.Remote, c.LocalNet, c.RemoteNet, p.espProposal, ids[0], ids[1], hex.EncodeToString(c.PSK))
	return []byte(b.String()), nil
}
