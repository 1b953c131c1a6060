package report

import (
	"fmt"
	"slices"
	"strings"
)

// StandardTests, StandardFlows and StandardMTUs are the standard profile's
// matrix (internal/suite's Profile("standard"); a test there checks that
// the two agree). A quick run's summary lists what of it the run left out.
var (
	StandardTests = []string{"tcp_stream", "tcp_rr", "tcp_crr", "udp_stream", "http", "tcp_rr_loaded"}
	StandardFlows = []string{"1", "32"}
	StandardMTUs  = []string{"1500", "9000"}
)

// LeftOut lists what a quick run (config profile=quick, the matrix, no
// scenario) leaves out of the standard matrix, each with the command that
// measures it; nil for any other run.
func LeftOut(config map[string]string) []string {
	if config["profile"] != "quick" || config["scenario"] != "" {
		return nil
	}
	missing := func(all []string, key string) []string {
		have := strings.Split(config[key], ",")
		var out []string
		for _, v := range all {
			if !slices.Contains(have, v) {
				out = append(out, v)
			}
		}
		return out
	}
	var out []string
	if t := missing(StandardTests, "tests"); len(t) > 0 {
		out = append(out, fmt.Sprintf("tests %s: cnibench suite --tests %s", strings.Join(t, ", "), strings.Join(t, ",")))
	}
	if f := missing(StandardFlows, "flows"); len(f) > 0 {
		out = append(out, fmt.Sprintf("%s flows (tcp tests): cnibench suite --tests tcp_stream,tcp_rr,tcp_crr --flows %s", strings.Join(f, ", "), strings.Join(f, ",")))
	}
	if m := missing(StandardMTUs, "mtus"); len(m) > 0 {
		out = append(out, fmt.Sprintf("MTU %s (tcp_stream and tcp_rr at 1 flow): cnibench suite --tests tcp_stream,tcp_rr --flows 1 --mtu %s",
			strings.Join(m, ", "), strings.Join(append([]string{config["mtus"]}, m...), ",")))
	}
	if len(out) > 0 {
		out = append(out, "all of it, with 2 s windows: cnibench suite --profile standard (about 25 minutes)")
	}
	return out
}

// leftOutBlocks is the summary's note on what a quick run left out.
func (m *model) leftOutBlocks() []block {
	l := LeftOut(m.set.Config)
	if len(l) == 0 {
		return nil
	}
	return []block{
		{Para: "This quick run grades the tcp tests a first look needs; it leaves out (with the command that measures each):"},
		{List: l},
	}
}
