package lab

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// NIC-like wire (WireNIC). A veth pair normally passes GSO packets of up to
// 64 KiB to its peer unsegmented and the peer receives them without GRO: per
// MTU-sized packet costs (VXLAN encapsulation, forwarding, netfilter on the
// receiving node) are paid once per 64 KiB. A host with a real NIC without
// TSO pays them per wire packet on the sender and merges packets again with
// GRO on the receiver. configureWire reproduces that on both ends of the
// wire:
//   - every TSO-like feature (tx-*-segmentation, tx-gso-list) off: the
//     kernel segments each GSO packet to the MTU in software (GSO) when the
//     wire device transmits it, so the peer receives MTU-sized packets;
//   - rx-gro on: a veth with GRO enabled receives through NAPI (kernel 5.13+)
//     and merges TCP (and VXLAN-encapsulated TCP) packets with GRO, as a NIC
//     driver does;
//   - checksum offload left on, as a NIC with checksum offload: the
//     checksum is not computed in software on either end.

// wireFeaturesOff lists the features of a wire end that must be off for the
// NIC-like mode: every TSO-like segmentation offload, but not
// tx-generic-segmentation (software GSO, which does the segmenting).
func wireFeaturesOff(names []string, fixed []bool) []string {
	var out []string
	for i, n := range names {
		if fixed[i] {
			continue
		}
		tso := strings.HasPrefix(n, "tx-") && strings.HasSuffix(n, "-segmentation") && n != "tx-generic-segmentation"
		if tso || n == "tx-gso-list" {
			out = append(out, n)
		}
	}
	return out
}

// configureWire applies the wire mode to the wire device of both nodes.
func configureWire(nodes [2]*NS, mode string) error {
	switch mode {
	case WireVeth, "":
		return nil
	case WireNIC:
	default:
		return fmt.Errorf("wire mode %q: must be one of %v", mode, Wires)
	}
	for _, n := range nodes {
		err := n.ethtool(func(fd int) error {
			want, err := setNICLike(fd, WireIf)
			if err != nil {
				return err
			}
			got, err := getFeatures(fd, WireIf)
			if err != nil {
				return err
			}
			for i, name := range got.names {
				if on, ok := want[name]; ok && got.active[i] != on {
					return fmt.Errorf("feature %s of %s is %v after asking for %v", name, WireIf, got.active[i], on)
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("NIC-like wire: %w", err)
		}
	}
	return nil
}

// SetNICLike gives the device ifName of n the NIC-like wire's behaviour
// (WireNIC: software GSO on transmit, GRO on receive), as the lab gives it
// to the wire between its nodes, for a datapath's own devices that stand
// for NICs. Unlike the wire, the outcome is not checked.
func (n *NS) SetNICLike(ifName string) error {
	return n.ethtool(func(fd int) error {
		_, err := setNICLike(fd, ifName)
		return err
	})
}

// setNICLike switches the NIC-like features of ifName (through the ethtool
// socket fd) and returns what it asked for.
func setNICLike(fd int, ifName string) (map[string]bool, error) {
	f, err := getFeatures(fd, ifName)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{"rx-gro": true}
	for _, name := range wireFeaturesOff(f.names, f.fixed) {
		want[name] = false
	}
	return want, setFeatures(fd, ifName, want)
}

// LinkStats are a device's packet and byte counters.
type LinkStats struct {
	RxPackets, RxBytes, TxPackets, TxBytes uint64
}

// LinkStats returns the counters of a device in n.
func (n *NS) LinkStats(ifName string) (LinkStats, error) {
	l, err := n.handle.LinkByName(ifName)
	if err != nil {
		return LinkStats{}, fmt.Errorf("find %s in %s: %w", ifName, n.Name, err)
	}
	s := l.Attrs().Statistics
	if s == nil {
		return LinkStats{}, fmt.Errorf("%s in %s: no statistics", ifName, n.Name)
	}
	return LinkStats{RxPackets: s.RxPackets, RxBytes: s.RxBytes, TxPackets: s.TxPackets, TxBytes: s.TxBytes}, nil
}

// ConntrackStats reads the connection-tracking statistics of n, summed over
// CPUs. A namespace where conntrack was never loaded has all zeros.
func ConntrackStats(n *NS) (CTStats, error) {
	var text []byte
	err := n.Do(func() error {
		var err error
		text, err = os.ReadFile("/proc/thread-self/net/stat/nf_conntrack")
		return err
	})
	if errors.Is(err, os.ErrNotExist) {
		return CTStats{}, nil
	}
	if err != nil {
		return CTStats{}, fmt.Errorf("conntrack statistics in %s: %w", n.Name, err)
	}
	s, err := ParseCTStats(string(text))
	if err != nil {
		return CTStats{}, fmt.Errorf("conntrack statistics in %s: %w", n.Name, err)
	}
	return s, nil
}
