package ipsec

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/testutil"
)

// TestProbeKernel runs the probe for both algorithms. On a kernel without
// ESP (CONFIG_INET_ESP unset, as on the project's lab machines) both must be
// ErrNotSupported with a reason naming ESP; elsewhere each is either nil or
// ErrNotSupported naming the algorithm.
func TestProbeKernel(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	for _, alg := range Algorithms() {
		t.Run(alg.Label(), func(t *testing.T) {
			err := ProbeKernel(alg)
			t.Logf("ProbeKernel(%s) = %v", alg, err)
			switch {
			case err == nil:
				return
			case !errors.Is(err, ErrNotSupported):
				t.Fatalf("probe failed: %v", err)
			case err == ErrNotSupported:
				t.Fatal("bare ErrNotSupported: the reason is missing")
			}
			msg := err.Error()
			if !strings.Contains(msg, "ESP") && !strings.Contains(msg, string(alg)) {
				t.Errorf("reason %q names neither ESP nor %s", msg, alg)
			}
			if kernelLacksESP(t) && !strings.Contains(msg, "no ESP") {
				t.Errorf("this kernel has no ESP, but the reason does not say so: %q", msg)
			}
		})
	}
}

// kernelLacksESP reports whether the running kernel's configuration
// (/proc/config.gz, when the kernel exposes it) says CONFIG_INET_ESP is
// unset: an oracle for the probe independent of xfrm.
func kernelLacksESP(t *testing.T) bool {
	t.Helper()
	f, err := os.Open("/proc/config.gz")
	if err != nil {
		return false // no config to check against
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("read /proc/config.gz: %v", err)
	}
	cfg, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("read /proc/config.gz: %v", err)
	}
	return bytes.Contains(cfg, []byte("\n# CONFIG_INET_ESP is not set\n"))
}
