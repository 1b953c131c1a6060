package proxies

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/scenario"
)

// A proxy that is not installed (a PATH without it, no sbin fallback) is
// recorded skipped with the install command: its points carry the reason
// the suite records, and Prepare of such a point (the program removed
// after planning) fails with backend.ErrNotSupported and the same words,
// which the suite records as skipped too. The points without it — none at
// 0 hops, the other proxy — still run.
func TestMissingProxySkipped(t *testing.T) {
	for _, missing := range [][]string{{HAProxy}, {Nginx}, {HAProxy, Nginx}} {
		t.Run(filepath.Join(missing...), func(t *testing.T) {
			dir := t.TempDir()
			for _, p := range Proxies {
				if slices.Contains(missing, p) {
					continue
				}
				if err := os.WriteFile(filepath.Join(dir, p), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("PATH", dir)
			old := sbinDirs
			sbinDirs = nil
			t.Cleanup(func() { sbinDirs = old })

			s, err := New(Options{})
			if err != nil {
				t.Fatal(err)
			}
			ran := 0
			for _, p := range s.Points() {
				px := p.Labels[LabelProxy]
				if !slices.Contains(missing, px) {
					if p.Skip != nil {
						t.Errorf("%v: skipped (%v), but %s is installed", p.Labels, p.Skip, px)
					}
					ran++
					continue
				}
				want := "skipped: not supported: " + px + " not found (install it: apt-get install haproxy nginx)"
				if got := p.SkipReason(); got != want {
					t.Errorf("%v: %q, want %q", p.Labels, got, want)
				}
				_, err := s.Prepare(context.Background(), scenario.Env{}, p)
				if !errors.Is(err, backend.ErrNotSupported) || "skipped: "+err.Error() != want {
					t.Errorf("%v: Prepare: %v", p.Labels, err)
				}
			}
			// none/0 with keep-alive on and off, and each installed
			// proxy at 1 and 2 hops, on and off.
			if want := 2 + 4*(len(Proxies)-len(missing)); ran != want {
				t.Errorf("%d points run, want %d", ran, want)
			}
		})
	}
}
