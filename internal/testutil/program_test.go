package testutil

import (
	"errors"
	"strings"
	"testing"
)

// recorder is a testing.TB that records Skip and Fatal instead of stopping.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Skip(args ...any)                  { r.skipped = args[0].(string) }
func (r *recorder) Fatalf(format string, args ...any) { r.failed = format }

func look(have ...string) func(string) (string, error) {
	return func(n string) (string, error) {
		for _, h := range have {
			if h == n {
				return "/usr/bin/" + n, nil
			}
		}
		return "", errors.New(`exec: "` + n + `": executable file not found in $PATH`)
	}
}

func TestNeedProgram(t *testing.T) {
	for _, tc := range []struct {
		name         string
		have         []string
		ci           bool
		skip, failed bool
	}{
		{"present", []string{"nft", "nsenter"}, false, false, false},
		{"present in CI", []string{"nft", "nsenter"}, true, false, false},
		{"missing skips", []string{"nsenter"}, false, true, false},
		{"missing fails in CI", []string{"nsenter"}, true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			needProgram(r, look(tc.have...), tc.ci, "nft", "nsenter")
			if (r.skipped != "") != tc.skip || (r.failed != "") != tc.failed {
				t.Fatalf("skipped %q, failed %q; want skip=%v fail=%v", r.skipped, r.failed, tc.skip, tc.failed)
			}
			if tc.skip && !strings.Contains(r.skipped, "nftables") {
				t.Errorf("skip reason %q does not name the package", r.skipped)
			}
		})
	}
}

func TestNeedAnyProgram(t *testing.T) {
	r := &recorder{TB: t}
	if got := needAnyProgram(r, look("chromium-browser"), false, "chromium", "chromium-browser"); got != "/usr/bin/chromium-browser" {
		t.Fatalf("got %q", got)
	}
	r = &recorder{TB: t}
	needAnyProgram(r, look(), true, "chromium", "chromium-browser")
	if r.failed == "" {
		t.Fatal("a missing browser in CI did not fail")
	}
	r = &recorder{TB: t}
	needAnyProgram(r, look(), false, "/usr/bin/chromium", "chromium")
	if !strings.Contains(r.skipped, "(chromium;") {
		t.Fatalf("skip reason %q does not name the package", r.skipped)
	}
}

func TestInCI(t *testing.T) {
	for v, want := range map[string]bool{"true": true, "1": true, "": false, "false": false, "yes": false} {
		t.Setenv("CI", v)
		if got := InCI(); got != want {
			t.Errorf("CI=%q: InCI() = %v, want %v", v, got, want)
		}
	}
}
