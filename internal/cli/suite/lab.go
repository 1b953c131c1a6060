package suitecmd

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/internal/cli/clierr"
	"github.com/cnibench/cnibench/internal/lab"
)

// labFlags are the lab backend's flags.
type labFlags struct {
	Datapaths   string
	NoConntrack bool
	NoBaseline  bool
	Pin         string
	Wire        string
}

// labOnly are the flags that apply to the lab only.
var labOnly = []string{"datapaths", "no-conntrack-scenario", "no-baseline", "pin", "wire"}

func (l *labFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&l.Datapaths, "datapaths", "", "lab: comma-separated datapaths (default: all; see 'cnibench lab datapaths'; a scenario's: "+lab.ScenarioDatapath+")")
	fl.BoolVar(&l.NoConntrack, "no-conntrack-scenario", false, "lab: skip the NOTRACK comparison on tcp_crr")
	fl.BoolVar(&l.NoBaseline, "no-baseline", false, "lab: with --datapaths, do not add the baseline datapath (the graded summary then has no reference)")
	fl.StringVar(&l.Pin, "pin", "", "lab: CPU placement: none (the scheduler decides), same (servers and clients on one CPU), split (servers on one CPU, clients on another) (default: same for the quick profile's matrix, none otherwise)")
	fl.StringVar(&l.Wire, "wire", "", "lab: wire mode between the lab's nodes (default: "+lab.DefaultWire+"; "+strings.Join(lab.Wires, ", ")+")")
}

// refuse rejects the lab's flags with another backend.
func (l *labFlags) refuse(cmd *cobra.Command, backend string) error {
	for _, n := range labOnly {
		if cmd.Flags().Changed(n) {
			return clierr.Usagef("--%s: applies to the lab only, not --backend %s; drop --%s", n, backend, n)
		}
	}
	return nil
}

// QuickPin is the quick profile's CPU placement on the lab when --pin is
// not given and no scenario runs: clients, servers and (with them) the
// datapath's softirq work on one CPU, so that each cell is bound by the
// path's CPU cost rather than by where the scheduler put each process —
// on 2 CPUs that placement, not the window, is most of a repeat's spread
// (docs/reports.md, "The quick profile").
const QuickPin = lab.PinSame

// options turns the flags into the lab backend's options; pinDefault is
// the placement when --pin is not given.
func (l *labFlags) options(cmd *cobra.Command, pinDefault string) (lab.BackendOptions, error) {
	o := lab.BackendOptions{Conntrack: !l.NoConntrack, NoBaseline: l.NoBaseline, Pin: l.Pin, Wire: l.Wire}
	if !cmd.Flags().Changed("pin") {
		o.Pin = pinDefault
	}
	if cmd.Flags().Changed("datapaths") {
		var err error
		if o.Datapaths, err = splitList("datapaths", l.Datapaths); err != nil {
			return o, err
		}
	}
	if err := o.Validate(); err != nil {
		return o, clierr.Usagef("%v", err)
	}
	return o, nil
}
