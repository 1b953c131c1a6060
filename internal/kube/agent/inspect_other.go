//go:build !linux

package agent

import (
	"fmt"
	"net/netip"
	"runtime"
)

// InspectNetns needs Linux (netlink).
func InspectNetns(ip netip.Addr) (Inspect, error) {
	err := fmt.Errorf("inspect: network namespaces are Linux's, not %s's", runtime.GOOS)
	return Inspect{Schema: SchemaInspect, Links: []Link{}, Tunnels: []Encap{}, Error: err.Error()}, err
}
