package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// netperfLoc is where netperf and netserver come from.
type netperfLoc struct {
	Netperf, Netserver string
	// BuildInto is non-empty when they must first be built there with
	// Script.
	BuildInto, Script string
}

// defaultPeersDir is where the harness builds netperf, relative to the
// checkout (ignored by git).
const defaultPeersDir = "peers-bin"

// defaultBuildScript is the peers' build script relative to the checkout:
// the project's shared directory sits beside the checkout
// (CHECKOUT/../shared/peers/build.sh).
func defaultBuildScript(root string) string {
	return filepath.Join(filepath.Dir(root), "shared", "peers", "build.sh")
}

const netperfHowTo = "build netperf 2.7 from https://github.com/HewlettPackard/netperf " +
	"(./autogen.sh && ./configure --enable-histogram && make) and put src/netperf and src/netserver on PATH, " +
	"or pass -peers-dir DIR (holding both) or -peers-build SCRIPT (Debian ships netperf only in non-free)"

// locateNetperf decides where netperf and netserver come from, without
// side effects (the functions look at PATH and the file system):
//
//  1. -peers-dir DIR: DIR/netperf and DIR/netserver, built there if missing;
//  2. else netperf and netserver on PATH;
//  3. else CHECKOUT/peers-bin, built there if missing.
//
// Building uses -peers-build, or else CHECKOUT/../shared/peers/build.sh
// when it exists. With neither, the error is one line saying how to get
// netperf.
func locateNetperf(peersDir, script, root string, lookPath func(string) (string, error), isExec func(string) bool) (netperfLoc, error) {
	dir := peersDir
	if dir == "" {
		np, err1 := lookPath("netperf")
		ns, err2 := lookPath("netserver")
		if err1 == nil && err2 == nil {
			return netperfLoc{Netperf: np, Netserver: ns}, nil
		}
		dir = defaultPeersDir
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(root, dir)
	}
	loc := netperfLoc{Netperf: filepath.Join(dir, "netperf"), Netserver: filepath.Join(dir, "netserver")}
	if isExec(loc.Netperf) && isExec(loc.Netserver) {
		return loc, nil
	}
	if script != "" {
		if !filepath.IsAbs(script) {
			script = filepath.Join(root, script)
		}
		if !isFile(script) {
			return loc, fmt.Errorf("-peers-build %s: no such file; %s", script, netperfHowTo)
		}
	} else {
		script = defaultBuildScript(root)
		if !isFile(script) {
			where := "not on PATH"
			if peersDir != "" {
				where = "not in -peers-dir " + dir
			}
			return loc, fmt.Errorf("netperf/netserver not found (%s, not in %s, and no build script at %s): %s",
				where, filepath.Join(root, defaultPeersDir), script, netperfHowTo)
		}
	}
	loc.BuildInto, loc.Script = dir, script
	return loc, nil
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// howToGet is one line naming how to install the missing peers.
func howToGet(missing []string) string {
	var hs []string
	for _, p := range missing {
		switch p {
		case "iperf3":
			hs = append(hs, "iperf3: apt-get install iperf3 (Debian/Ubuntu) or dnf install iperf3")
		case "hey":
			hs = append(hs, "hey: apt-get install hey (Debian ≥ 11) or go install github.com/rakyll/hey@latest")
		case "wrk":
			hs = append(hs, "wrk: apt-get install wrk (Debian/Ubuntu) or build https://github.com/wg/wrk")
		default:
			hs = append(hs, p+": install it and put it on PATH")
		}
	}
	return strings.Join(hs, "; ")
}
