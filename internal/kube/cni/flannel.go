package cni

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// flannelKey is the key of kube-flannel-cfg that holds flannel's network
// configuration.
const flannelKey = "net-conf.json"

// flannelNetConf is what flannelMode reads of net-conf.json (flannel's
// subnet.Config; encoding/json matches the keys without regard to case,
// as flannel's own parser does).
type flannelNetConf struct {
	Network     string
	IPv6Network string
	EnableIPv6  bool
	Backend     json.RawMessage
	// MTU is not flannel's (it derives the MTU from the node's
	// interface) but some installers write it: a number or a string.
	MTU any
}

// flannelBackend is what flannelMode reads of net-conf.json's Backend.
type flannelBackend struct {
	Type          string
	VNI           int
	Port          int
	DirectRouting bool
}

// backendType is what a flannel backend type may look like (udp, vxlan,
// host-gw, wireguard, ipip, alloc, aws-vpc, …).
var backendType = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$`)

func flannelMode(data map[string]string) (string, map[string]string, []string, error) {
	s, ok := data[flannelKey]
	if !ok {
		return "", nil, nil, fmt.Errorf("no key %s", flannelKey)
	}
	return parseFlannelNetConf(s)
}

// parseFlannelNetConf reads flannel's net-conf.json: the mode is the
// backend's type ("vxlan+directrouting" for VXLAN with direct routing
// between nodes of one subnet); flannel's own default, udp, when the
// configuration has no Backend.
func parseFlannelNetConf(s string) (string, map[string]string, []string, error) {
	var c flannelNetConf
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		return "", nil, nil, fmt.Errorf("%s: %w", flannelKey, err)
	}
	var ev []string
	var be flannelBackend
	if len(c.Backend) == 0 {
		be.Type = "udp"
		ev = append(ev, "flannel: "+flannelKey+" has no Backend: flannel's default, udp")
	} else if err := json.Unmarshal(c.Backend, &be); err != nil {
		return "", nil, nil, fmt.Errorf("%s: Backend: %w", flannelKey, err)
	}
	if !backendType.MatchString(be.Type) {
		return "", nil, nil, fmt.Errorf("%s: Backend.Type %q is not a backend type", flannelKey, clip(be.Type))
	}
	mode := strings.ToLower(be.Type)
	set := map[string]string{"backend": mode}
	if be.DirectRouting {
		set["direct_routing"] = "true"
		if mode == "vxlan" {
			mode += "+directrouting"
		}
	}
	if c.Network != "" {
		set["network"] = clip(c.Network)
	}
	if c.EnableIPv6 || c.IPv6Network != "" {
		set["ipv6_network"] = clip(c.IPv6Network)
	}
	if mtu := flannelMTU(c.MTU); mtu > 0 {
		set["mtu"] = strconv.Itoa(mtu)
	}
	if be.VNI != 0 {
		set["vni"] = strconv.Itoa(be.VNI)
	}
	if be.Port != 0 {
		set["port"] = strconv.Itoa(be.Port)
	}
	return mode, set, ev, nil
}

// flannelMTU is net-conf.json's MTU, a number or a string of one (0: none
// or not a number).
func flannelMTU(v any) int {
	switch v := v.(type) {
	case float64:
		if v >= 1 && v <= 1<<20 && v == float64(int(v)) {
			return int(v)
		}
	case string:
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 && n <= 1<<20 {
			return n
		}
	}
	return 0
}
