//go:build !linux

package lbnet

import (
	"context"
	"net/netip"
	"time"

	"github.com/cnibench/cnibench/internal/lab"
)

// LB is the l4lb lab's load balancer (Linux only): the methods report
// lab.ErrNotSupportedOnOS or return nothing, so that code using it builds
// everywhere.
type LB struct{}

// Of is not supported on this OS.
func Of(*lab.Lab) (*LB, error) { return nil, lab.ErrNotSupportedOnOS }

func (*LB) Client() *lab.NS                         { return nil }
func (*LB) ClientFW() *lab.NS                       { return nil }
func (*LB) LBNode() *lab.NS                         { return nil }
func (*LB) Switch() *lab.NS                         { return nil }
func (*LB) Workers() [2]*lab.NS                     { return [2]*lab.NS{} }
func (*LB) Backends() []lab.Pod                     { return nil }
func (*LB) VIP() netip.Addr                         { return VIP }
func (*LB) Services() []netip.AddrPort              { return nil }
func (*LB) Mode() Mode                              { return Mode{} }
func (*LB) Counters() (Counters, error)             { return Counters{}, lab.ErrNotSupportedOnOS }
func (*LB) FirewallDrops() (uint64, error)          { return 0, lab.ErrNotSupportedOnOS }
func (*LB) LBFirewallDropsByCPU() ([]uint64, error) { return nil, lab.ErrNotSupportedOnOS }
func (*LB) Configure(context.Context, Mode) error   { return lab.ErrNotSupportedOnOS }

func (*LB) ConntrackVIPEntries() (int, error) { return 0, lab.ErrNotSupportedOnOS }
func (*LB) SetCPUSplit(CPUSplit) error        { return lab.ErrNotSupportedOnOS }
func (*LB) CPUSplit() CPUSplit                { return CPUSplit{} }

// ReadSoftnetStat is not supported on this OS.
func ReadSoftnetStat() ([]SoftnetCPU, error) { return nil, lab.ErrNotSupportedOnOS }

// SYNFlood is not supported on this OS.
func (*LB) SYNFlood(context.Context, int, int) (SYNFloodResult, error) {
	return SYNFloodResult{}, lab.ErrNotSupportedOnOS
}

// RefusalProbe is not supported on this OS.
func (*LB) RefusalProbe(context.Context, time.Duration) (RefusalResult, error) {
	return RefusalResult{}, lab.ErrNotSupportedOnOS
}
