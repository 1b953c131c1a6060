package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// program is an external program a selection of comparisons runs, with the
// Debian package that provides it.
type program struct {
	Name    string // looked up on PATH
	Package string // Debian package
}

// Programs every peer comparison runs: namespaces and commands in them
// (ip), the servers' readiness check (ss), sysctls (sysctl), and with -pin
// the CPU placement (taskset).
var (
	progIP      = program{"ip", "iproute2"}
	progSS      = program{"ss", "iproute2"}
	progSysctl  = program{"sysctl", "procps"}
	progTaskset = program{"taskset", "util-linux"}
)

// peerPrograms are the peers installed from packages, by the comparison's
// Peer. netperf is not here: Debian has it only in non-free, so
// locateNetperf finds or builds it.
var peerPrograms = map[string]program{
	"iperf3": {"iperf3", "iperf3"},
	"hey":    {"hey", "hey"},
	"wrk":    {"wrk", "wrk"},
}

// egressPrograms are what -tests egress-load runs: the peers `nft -f` and
// `ipset restore`, cnibench's ipset mechanism (ipset, and
// iptables-nft-restore for its set-match rule), and GNU time for the
// peers' maximum RSS.
var egressPrograms = []program{
	{"nft", "nftables"},
	{"ipset", "ipset"},
	{"iptables-nft-restore", "iptables"},
	{"time", "time"},
}

// programsNeeded returns every external program that the selected tests
// run with CPU placement pin, each once, in a stable order (netperf and
// netserver aside: locateNetperf finds or builds them). Unknown tests
// need nothing (validate refuses them first).
func programsNeeded(tests []string, pin string) []program {
	if slices.Contains(tests, egressTest) {
		return slices.Clone(egressPrograms)
	}
	need := []program{progIP, progSS, progSysctl}
	if pin != "" && pin != "none" {
		need = append(need, progTaskset)
	}
	peers := peersNeeded(tests)
	for _, name := range []string{"iperf3", "hey", "wrk"} {
		if peers[name] {
			need = append(need, peerPrograms[name])
		}
	}
	return need
}

// missingPrograms returns the programs lookPath does not find.
func missingPrograms(need []program, lookPath func(string) (string, error)) []program {
	var miss []program
	for _, p := range need {
		if _, err := lookPath(p.Name); err != nil {
			miss = append(miss, p)
		}
	}
	return miss
}

// installLine is the command that installs the packages of missing, each
// package once.
func installLine(missing []program) string {
	return "apt-get install -y " + strings.Join(packagesOf(missing), " ")
}

// packagesOf returns the packages of ps, each once, in order.
func packagesOf(ps []program) []string {
	var pkgs []string
	for _, p := range ps {
		if !slices.Contains(pkgs, p.Package) {
			pkgs = append(pkgs, p.Package)
		}
	}
	return pkgs
}

func programNames(ps []program) string { return strings.Join(namesOf(ps), ", ") }

// prereqHost is what ensurePrograms asks of the machine (faked in tests).
type prereqHost struct {
	lookPath func(string) (string, error)
	// root: the harness may install packages.
	root bool
	// install installs Debian packages (aptInstall).
	install func(ctx context.Context, pkgs []string) error
}

// ensurePrograms makes sure every program in need is on PATH before the
// first round: it installs the missing ones with apt-get when it can (root,
// apt-get present, no -no-install), else, or if that fails, it returns one
// line naming the missing programs and the command that installs them.
func ensurePrograms(ctx context.Context, tests string, need []program, noInstall bool, h prereqHost) error {
	missing := missingPrograms(need, h.lookPath)
	if len(missing) == 0 {
		return nil
	}
	refuse := func(why string) error {
		return fmt.Errorf("-tests %s needs %s, not found on PATH: install with `%s`%s",
			tests, programNames(missing), installLine(missing), why)
	}
	_, aptErr := h.lookPath("apt-get")
	switch {
	case noInstall:
		return refuse(" (-no-install given)")
	case !h.root:
		return refuse(" as root (the harness installs them only as root)")
	case aptErr != nil:
		hint := " or your system's package manager (no apt-get here)"
		var peers []string
		for _, p := range missing {
			if _, ok := peerPrograms[p.Name]; ok {
				peers = append(peers, p.Name)
			}
		}
		if len(peers) > 0 {
			hint += "; " + howToGet(peers)
		}
		return refuse(hint)
	}
	pkgs := packagesOf(missing)
	logf("-tests %s needs %s: installing %s", tests, programNames(missing), strings.Join(pkgs, " "))
	if err := h.install(ctx, pkgs); err != nil {
		return refuse(" (the harness tried and failed: " + oneLine(err.Error()) + ")")
	}
	if still := missingPrograms(need, h.lookPath); len(still) > 0 {
		missing = still
		return refuse(" (installed, but still not on PATH: check PATH)")
	}
	return nil
}

func namesOf(ps []program) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name
	}
	return out
}

// oneLine joins the lines of s (an error from a tool can have several).
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}
