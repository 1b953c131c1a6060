package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLocateNetperf(t *testing.T) {
	// base/checkout is the checkout, base/shared/peers/build.sh the
	// peers' script beside it, base/bin a directory on "PATH".
	mk := func(t *testing.T, files ...string) string {
		base := t.TempDir()
		for _, f := range files {
			p := filepath.Join(base, f)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.MkdirAll(filepath.Join(base, "checkout"), 0o755); err != nil {
			t.Fatal(err)
		}
		return base
	}
	pathIn := func(base string) func(string) (string, error) {
		return func(name string) (string, error) {
			p := filepath.Join(base, "bin", name)
			if isExec(p) {
				return p, nil
			}
			return "", errors.New("not found")
		}
	}
	for _, tc := range []struct {
		name              string
		files             []string
		peersDir, script  string
		wantNetperf       string // relative to base
		wantBuild, wantSc string // relative to base; "" = no build
		wantErr           string
	}{
		{name: "on PATH", files: []string{"bin/netperf", "bin/netserver", "shared/peers/build.sh"},
			wantNetperf: "bin/netperf"},
		{name: "PATH has only netperf: checkout's peers-bin", files: []string{"bin/netperf", "checkout/peers-bin/netperf", "checkout/peers-bin/netserver"},
			wantNetperf: "checkout/peers-bin/netperf"},
		{name: "build with the script beside the checkout", files: []string{"shared/peers/build.sh"},
			wantNetperf: "checkout/peers-bin/netperf", wantBuild: "checkout/peers-bin", wantSc: "shared/peers/build.sh"},
		{name: "-peers-dir wins over PATH", files: []string{"bin/netperf", "bin/netserver", "mine/netperf", "mine/netserver"},
			peersDir: "../mine", wantNetperf: "mine/netperf"},
		{name: "-peers-dir empty: built there with -peers-build", files: []string{"bin/netperf", "bin/netserver", "tools/build.sh"},
			peersDir: "../mine", script: "../tools/build.sh", wantNetperf: "mine/netperf", wantBuild: "mine", wantSc: "tools/build.sh"},
		{name: "nothing anywhere", wantErr: "netperf/netserver not found (not on PATH"},
		{name: "-peers-build missing", script: "nope.sh", wantErr: "-peers-build"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := mk(t, tc.files...)
			root := filepath.Join(base, "checkout")
			loc, err := locateNetperf(tc.peersDir, tc.script, root, pathIn(base), isExec)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "HewlettPackard/netperf") {
					t.Errorf("error is not one line naming how to get netperf: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			rel := func(p string) string {
				if p == "" {
					return ""
				}
				r, err := filepath.Rel(base, filepath.Clean(p))
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			if rel(loc.Netperf) != tc.wantNetperf || rel(loc.BuildInto) != tc.wantBuild || rel(loc.Script) != tc.wantSc {
				t.Errorf("got netperf %q build %q script %q; want %q %q %q",
					rel(loc.Netperf), rel(loc.BuildInto), rel(loc.Script), tc.wantNetperf, tc.wantBuild, tc.wantSc)
			}
			if filepath.Dir(loc.Netperf) != filepath.Dir(loc.Netserver) {
				t.Errorf("netperf %s and netserver %s from different places", loc.Netperf, loc.Netserver)
			}
		})
	}
}

// No machine-specific default: the build script is found relative to the
// checkout.
func TestDefaultBuildScript(t *testing.T) {
	if got := defaultBuildScript("/x/y/main"); got != "/x/y/shared/peers/build.sh" {
		t.Errorf("defaultBuildScript = %s", got)
	}
}

func TestPeersNeeded(t *testing.T) {
	got := peersNeeded([]string{"tcp_rr", "tcp_crr"})
	if !got["netperf"] || got["iperf3"] || got["hey"] {
		t.Errorf("tcp_rr,tcp_crr need %v, want only netperf", got)
	}
	got = peersNeeded([]string{"http", "tcp_stream"})
	if got["netperf"] || !got["iperf3"] || !got["hey"] || !got["wrk"] {
		t.Errorf("http,tcp_stream need %v, want iperf3, hey and wrk", got)
	}
}

// -tests http runs both http comparisons: against hey, then against wrk
// (the latter named "http vs wrk" in reports).
func TestHTTPComparisons(t *testing.T) {
	cs := comparisonsByTest("http")
	if len(cs) != 2 || cs[0].Peer != "hey" || cs[1].Peer != "wrk" {
		t.Fatalf("comparisonsByTest(http) = %+v, want hey then wrk", cs)
	}
	if cs[0].Name() != "http" || cs[1].Name() != "http vs wrk" || cs[1].Target != 1.0 {
		t.Errorf("names %q, %q, wrk target %v", cs[0].Name(), cs[1].Name(), cs[1].Target)
	}
	if comparisonByTest("http") != cs[0] || comparisonByTest("tcp_rr").Name() != "tcp_rr" {
		t.Error("comparisonByTest does not return the test's first comparison")
	}
	if !strings.Contains(cs[1].PeerTest, `-H "Connection: close"`) {
		t.Errorf("wrk's PeerTest %q does not say Connection: close", cs[1].PeerTest)
	}
}

func TestHowToGet(t *testing.T) {
	s := howToGet([]string{"iperf3", "hey", "wrk"})
	if !strings.Contains(s, "apt-get install iperf3") || !strings.Contains(s, "apt-get install hey") ||
		!strings.Contains(s, "apt-get install wrk") || strings.Contains(s, "\n") {
		t.Errorf("howToGet = %q", s)
	}
}
