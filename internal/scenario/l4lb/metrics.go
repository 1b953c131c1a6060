package l4lb

import "github.com/cnibench/cnibench/pkg/result"

// metrics documents the scenario's own metrics (proof.go's, and the
// point's configuration time), registered with the scenario (register.go;
// docs/results.md mirrors them).
var metrics = map[string]result.MetricInfo{
	"lb_configure_seconds": {Unit: "s", Better: result.LowerIsBetter, Help: "l4lb scenario: time to configure the point's mode (programs loaded and attached, tunnels, firewall)"},
	MetricLBForward:        {Unit: "packets", Better: result.Neutral, Help: "l4lb scenario: client-to-backend packets the LB translated during the cell"},
	MetricLBReverse:        {Unit: "packets", Better: result.Neutral, Help: "l4lb scenario: replies the LB translated during the cell (snat; 0 in dsr, where replies bypass the LB)"},
	MetricWorkerRevNAT:     {Unit: "packets", Better: result.Neutral, Help: "l4lb scenario: replies the workers translated back to the VIP during the cell (dsr)"},
	MetricFirewallDrops:    {Unit: "packets", Better: result.Neutral, Help: "l4lb scenario: service packets the host firewall dropped during the cell (the refused client's)"},
	MetricRefusedTried:     {Unit: "connects", Better: result.Neutral, Help: "l4lb scenario: connects the refused client (another prefix) made to the VIP during the cell, firewall off or on"},
	MetricRefusedOK:        {Unit: "connects", Better: result.Neutral, Help: "l4lb scenario: of those, connects that completed a handshake (must be 0 with the firewall on)"},
	MetricRefusedReset:     {Unit: "connects", Better: result.Neutral, Help: "l4lb scenario: of those, connects answered with a reset (must be 0 with the firewall on)"},
	MetricLBCPU:            {Unit: "%", Better: result.LowerIsBetter, Help: "l4lb scenario: the LB node's CPU in % of one core over the client's run: receive processing charged to its network namespace by BPF accounting (internal/bpf/nscpu)"},
	MetricWorkersCPU:       {Unit: "%", Better: result.LowerIsBetter, Help: "l4lb scenario: both workers' CPU in % of one core over the client's run: receive processing charged to the workers' and their pods' namespaces plus the backend processes' CPU time"},
	MetricWorker1CPU:       {Unit: "%", Better: result.LowerIsBetter, Help: "l4lb scenario: worker 1's share of lb_workers_cpu_pct"},
	MetricWorker2CPU:       {Unit: "%", Better: result.LowerIsBetter, Help: "l4lb scenario: worker 2's share of lb_workers_cpu_pct"},
}
