//go:build !linux

package lab

import (
	"context"
	"net/netip"
	"time"
)

// L4LB is the l4lb lab's load balancer (Linux only): the methods report
// ErrNotSupportedOnOS or return nothing, so that code using it builds
// everywhere.
type L4LB struct{}

// L4LBOf is not supported on this OS.
func L4LBOf(*Lab) (*L4LB, error) { return nil, ErrNotSupportedOnOS }

func (*L4LB) Client() *NS                               { return nil }
func (*L4LB) ClientFW() *NS                             { return nil }
func (*L4LB) LBNode() *NS                               { return nil }
func (*L4LB) Switch() *NS                               { return nil }
func (*L4LB) Workers() [2]*NS                           { return [2]*NS{} }
func (*L4LB) Backends() []Pod                           { return nil }
func (*L4LB) VIP() netip.Addr                           { return L4LBVIP }
func (*L4LB) Services() []netip.AddrPort                { return nil }
func (*L4LB) Mode() L4LBMode                            { return L4LBMode{} }
func (*L4LB) Counters() (LBCounters, error)             { return LBCounters{}, ErrNotSupportedOnOS }
func (*L4LB) FirewallDrops() (uint64, error)            { return 0, ErrNotSupportedOnOS }
func (*L4LB) LBFirewallDropsByCPU() ([]uint64, error)   { return nil, ErrNotSupportedOnOS }
func (*L4LB) Configure(context.Context, L4LBMode) error { return ErrNotSupportedOnOS }

func (*L4LB) ConntrackVIPEntries() (int, error) { return 0, ErrNotSupportedOnOS }
func (*L4LB) SetCPUSplit(L4LBCPUSplit) error    { return ErrNotSupportedOnOS }
func (*L4LB) CPUSplit() L4LBCPUSplit            { return L4LBCPUSplit{} }

// ReadSoftnetStat is not supported on this OS.
func ReadSoftnetStat() ([]SoftnetCPU, error) { return nil, ErrNotSupportedOnOS }

// SYNFlood is not supported on this OS.
func (*L4LB) SYNFlood(context.Context, int, int) (SYNFloodResult, error) {
	return SYNFloodResult{}, ErrNotSupportedOnOS
}

// RefusalProbe is not supported on this OS.
func (*L4LB) RefusalProbe(context.Context, time.Duration) (RefusalResult, error) {
	return RefusalResult{}, ErrNotSupportedOnOS
}
