package netkit

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

func TestAddPairRejectsBadArgumentsBeforeTheKernel(t *testing.T) {
	if err := AddPair(nil, "cnbh1", "eth0", 3, 0); err == nil || !strings.Contains(err.Error(), "nil netlink handle") {
		t.Fatalf("AddPair(nil handle) = %v", err)
	}
	// A zero Handle opens sockets lazily, so nothing reaches the kernel
	// when validation fails (works unprivileged).
	h := &netlink.Handle{}
	for _, args := range []struct {
		host, peer string
		fd, mtu    int
	}{
		{"", "eth0", 3, 0},
		{"cnbh1", "this-name-is-too-long", 3, 0},
		{"cnbh1", "eth0", -1, 0},
		{"cnbh1", "eth0", 3, 10},
	} {
		err := AddPair(h, args.host, args.peer, args.fd, args.mtu)
		if err == nil {
			t.Errorf("AddPair(%+v) succeeded", args)
			continue
		}
		if errors.Is(err, ErrNotSupported) {
			t.Errorf("AddPair(%+v) = %v: argument errors must not look like missing support", args, err)
		}
	}
}

func TestProbe(t *testing.T) {
	err := Probe()
	if err != nil && !errors.Is(err, ErrNotSupported) {
		t.Fatalf("Probe() = %v: want nil or an error wrapping ErrNotSupported", err)
	}
	if os.Geteuid() != 0 {
		if err == nil {
			t.Fatal("Probe() succeeded without root")
		}
		t.Logf("unprivileged: %v", err)
		return
	}
	if err != nil {
		// As root the only reason left is the kernel.
		if !strings.Contains(err.Error(), "kernel has no netkit device (CONFIG_NETKIT)") {
			t.Fatalf("Probe() as root = %v, want the CONFIG_NETKIT reason", err)
		}
		t.Logf("kernel without netkit: %v", err)
	}
	kernelHasNetkit := err == nil

	// The lab's path: node namespace with the host end, pod namespace with
	// the peer. Unnamed namespaces vanish when their handles are closed.
	nodeNS, err := newScratchNS()
	if err != nil {
		t.Fatalf("node netns: %v", err)
	}
	defer nodeNS.Close()
	podNS, err := newScratchNS()
	if err != nil {
		t.Fatalf("pod netns: %v", err)
	}
	defer podNS.Close()
	node := handleAt(t, nodeNS)
	pod := handleAt(t, podNS)

	err = AddPair(node, "cnbnk1", "eth0", int(podNS), 1400)
	if !kernelHasNetkit {
		if !errors.Is(err, ErrNotSupported) {
			t.Fatalf("AddPair on a kernel without netkit = %v, want ErrNotSupported", err)
		}
		if _, lerr := node.LinkByName("cnbnk1"); lerr == nil {
			t.Fatal("failed AddPair left a link behind")
		}
		return
	}
	if err != nil {
		t.Fatalf("AddPair: %v", err)
	}
	host, err := node.LinkByName("cnbnk1")
	if err != nil {
		t.Fatalf("host end: %v", err)
	}
	nk, ok := host.(*netlink.Netkit)
	if !ok {
		t.Fatalf("host end is %T (%s), want netkit", host, host.Type())
	}
	if nk.Mode != netlink.NETKIT_MODE_L3 || !nk.IsPrimary() || nk.MTU != 1400 {
		t.Errorf("host end: mode %v primary %v mtu %d, want L3, primary, 1400", nk.Mode, nk.IsPrimary(), nk.MTU)
	}
	peer, err := pod.LinkByName("eth0")
	if err != nil {
		t.Fatalf("peer end not in pod namespace: %v", err)
	}
	if peer.Type() != "netkit" || peer.Attrs().MTU != 1400 {
		t.Errorf("peer end: type %s mtu %d, want netkit 1400", peer.Type(), peer.Attrs().MTU)
	}
	if err := node.LinkDel(host); err != nil {
		t.Fatalf("delete pair: %v", err)
	}
}

func handleAt(t *testing.T, ns netns.NsHandle) *netlink.Handle {
	t.Helper()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatalf("netlink handle: %v", err)
	}
	t.Cleanup(h.Close)
	return h
}
