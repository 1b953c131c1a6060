package main

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestProgramsNeeded(t *testing.T) {
	for _, tc := range []struct {
		tests string
		pin   string
		want  []string
	}{
		{"egress-load", "none", []string{"nft", "ipset", "iptables-nft-restore", "time"}},
		{"tcp_rr,tcp_crr", "none", []string{"ip", "ss", "sysctl"}},
		{"tcp_rr", "same", []string{"ip", "ss", "sysctl", "taskset"}},
		{"tcp_stream", "none", []string{"ip", "ss", "sysctl", "iperf3"}},
		{"http", "split", []string{"ip", "ss", "sysctl", "taskset", "hey", "wrk"}},
		{"tcp_rr,tcp_crr,tcp_stream,http", "none", []string{"ip", "ss", "sysctl", "iperf3", "hey", "wrk"}},
	} {
		t.Run(tc.tests+"/"+tc.pin, func(t *testing.T) {
			got := programsNeeded(splitList(tc.tests), tc.pin)
			if names := namesOf(got); !slices.Equal(names, tc.want) {
				t.Errorf("programsNeeded(%s, %s) = %v, want %v", tc.tests, tc.pin, names, tc.want)
			}
			for _, p := range got {
				if p.Package == "" {
					t.Errorf("%s has no package", p.Name)
				}
			}
		})
	}
}

// fakeHost is a machine whose PATH holds onPath; installing a package puts
// its programs there unless broken.
type fakeHost struct {
	onPath    map[string]bool
	installed [][]string
	broken    bool // apt-get install fails
	noEffect  bool // apt-get install succeeds but installs nothing
}

func (f *fakeHost) lookPath(name string) (string, error) {
	if f.onPath[name] {
		return "/usr/bin/" + name, nil
	}
	return "", errors.New("executable file not found in $PATH")
}

func (f *fakeHost) install(_ context.Context, pkgs []string) error {
	f.installed = append(f.installed, pkgs)
	if f.broken {
		return errors.New("apt-get install nftables: exit status 100\nE: Unable to locate package")
	}
	if f.noEffect {
		return nil
	}
	for _, p := range egressPrograms {
		if slices.Contains(pkgs, p.Package) {
			f.onPath[p.Name] = true
		}
	}
	return nil
}

func TestEnsurePrograms(t *testing.T) {
	egressNeed := programsNeeded([]string{egressTest}, "none")
	for _, tc := range []struct {
		name      string
		tests     string    // default egress-load
		need      []program // default egress-load's
		onPath    []string
		root      bool
		noInstall bool
		broken    bool
		noEffect  bool
		// wantInstall: the packages apt-get is asked for (nil: not run).
		wantInstall []string
		// wantErr: substrings of the one-line error ("" : no error).
		wantErr []string
	}{
		{name: "all there", onPath: []string{"nft", "ipset", "iptables-nft-restore", "time", "apt-get"}, root: true},
		{name: "installed as root", onPath: []string{"time", "apt-get"}, root: true,
			wantInstall: []string{"nftables", "ipset", "iptables"}},
		{name: "no-install", onPath: []string{"time", "apt-get"}, root: true, noInstall: true,
			wantErr: []string{"-tests egress-load needs nft, ipset, iptables-nft-restore,", "`apt-get install -y nftables ipset iptables`", "-no-install"}},
		{name: "not root", onPath: []string{"nft", "apt-get"}, root: false,
			wantErr: []string{"needs ipset, iptables-nft-restore, time,", "`apt-get install -y ipset iptables time` as root"}},
		{name: "no apt-get", onPath: []string{"nft", "ipset", "iptables-nft-restore"}, root: true,
			wantErr: []string{"needs time,", "`apt-get install -y time`", "no apt-get here)"}},
		{name: "no apt-get, a peer", onPath: []string{"nft", "ipset", "iptables-nft-restore", "time"}, root: true, need: []program{peerPrograms["hey"]},
			tests:   "http",
			wantErr: []string{"-tests http needs hey,", "`apt-get install -y hey`", "no apt-get here); hey: apt-get install hey (Debian ≥ 11) or go install"}},
		{name: "apt-get fails", onPath: []string{"apt-get", "ipset", "iptables-nft-restore", "time"}, root: true, broken: true,
			wantInstall: []string{"nftables"},
			wantErr:     []string{"needs nft,", "`apt-get install -y nftables`", "tried and failed: apt-get install nftables: exit status 100 E: Unable"}},
		{name: "installed but not on PATH", onPath: []string{"apt-get", "nft", "ipset", "iptables-nft-restore"}, root: true, noEffect: true,
			wantInstall: []string{"time"},
			wantErr:     []string{"needs time,", "still not on PATH"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeHost{onPath: map[string]bool{}, broken: tc.broken, noEffect: tc.noEffect}
			for _, p := range tc.onPath {
				f.onPath[p] = true
			}
			tests, need := egressTest, egressNeed
			if tc.tests != "" {
				tests, need = tc.tests, tc.need
			}
			err := ensurePrograms(context.Background(), tests, need, tc.noInstall, prereqHost{lookPath: f.lookPath, root: tc.root, install: f.install})
			switch {
			case tc.wantInstall == nil && len(f.installed) > 0:
				t.Errorf("apt-get install %v run, want none", f.installed)
			case tc.wantInstall != nil && (len(f.installed) != 1 || !slices.Equal(f.installed[0], tc.wantInstall)):
				t.Errorf("apt-get install %v, want once %v", f.installed, tc.wantInstall)
			}
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("ensurePrograms: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("ensurePrograms succeeded, want a refusal")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("refusal is not one line: %q", msg)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(msg, w) {
					t.Errorf("refusal %q does not contain %q", msg, w)
				}
			}
		})
	}
}
