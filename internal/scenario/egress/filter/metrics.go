package filter

import "github.com/cnibench/cnibench/pkg/result"

// The egress-filter scenario's own metrics: set-up costs of the filter at
// one (mechanism, rules) point, attached to every repeat measured at it,
// and its tear-down (registered with the scenario, egress/register.go).
const (
	SetupSeconds           = "filter_setup_seconds"
	SetupReturnedSeconds   = "filter_setup_returned_seconds"
	SetupResolutionSeconds = "filter_setup_resolution_seconds"
	SetupAllowedLost       = "filter_setup_allowed_lost_probes"
	UpdateAddSeconds       = "filter_update_add_seconds"
	UpdateRemoveSeconds    = "filter_update_remove_seconds"
	KernelBytes            = "filter_kernel_bytes"
	LoaderRSSBytes         = "filter_loader_rss_bytes"
	TeardownSeconds        = "filter_teardown_seconds"
	SuitePeakRSSBytes      = "filter_suite_peak_rss_bytes"
)

// Metrics documents them (docs/results.md mirrors them).
var Metrics = map[string]result.MetricInfo{
	SetupSeconds:           {Unit: "s", Better: result.LowerIsBetter, Help: "egress-filter scenario: time from the start of loading the deny set until enforcement was proven (a probe to the server's address inside a deny CIDR no longer arrives while its ordinary address still answers); the probe that located it is filter_setup_resolution_seconds after the previous one"},
	SetupReturnedSeconds:   {Unit: "s", Better: result.LowerIsBetter, Help: "egress-filter scenario: time from the start of loading the deny set until the loader returned (filter_setup_seconds is when it was proven to enforce)"},
	SetupResolutionSeconds: {Unit: "s", Better: result.Neutral, Help: "egress-filter scenario: resolution of filter_setup_seconds, the gap between the first dropped probe and the one before it"},
	SetupAllowedLost:       {Unit: "probes", Better: result.LowerIsBetter, Help: "egress-filter scenario on a cluster: probes of the allowed server (one every 10 ms) unanswered while the deny went in and was proven; it answered again by the end of the proof, else the point fails as cutting it"},
	UpdateAddSeconds:       {Unit: "s", Better: result.LowerIsBetter, Help: "egress-filter scenario: time from the start of adding one /32 to the loaded set until a probe to it was proven dropped"},
	UpdateRemoveSeconds:    {Unit: "s", Better: result.LowerIsBetter, Help: "egress-filter scenario: time from the start of removing that /32 again until probes to it arrived again"},
	KernelBytes:            {Unit: "bytes", Better: result.LowerIsBetter, Help: "egress-filter scenario: kernel memory of the filter's rules or maps as the kernel reports it (BPF map memory, ipset size in memory); absent when the mechanism cannot tell"},
	LoaderRSSBytes:         {Unit: "bytes", Better: result.LowerIsBetter, Help: "egress-filter scenario: peak RSS of the loader; an external loader's own peak (ipset, iptables-restore), or for in-process loaders the suite's peak RSS during the load minus its RSS before"},
	TeardownSeconds:        {Unit: "s", Better: result.LowerIsBetter, Help: "egress-filter scenario: time to remove the filter after the point's cells"},
	SuitePeakRSSBytes:      {Unit: "bytes", Better: result.LowerIsBetter, Help: "egress-filter scenario on a cluster: cnibench's own peak RSS (VmHWM, reset through /proc/self/clear_refs at the point's start) while it built the deny set and its policy objects, sent them and proved the deny"},
}
