package nsrun

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/testutil"
)

// mountOf returns the optional fields (propagation) of the mount at dir, or
// ok=false if dir is not a mount point.
func mountOf(t *testing.T, dir string) (opts string, ok bool) {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		if len(fl) > 6 && fl[4] == dir {
			opts, ok = strings.Join(fl[6:], " "), true // the last mount at dir wins
		}
	}
	return opts, ok
}

func TestEnsureRunDir(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	for _, tc := range []struct {
		name      string
		populate  bool
		wantMount bool
	}{
		{"empty directory becomes a shared mount point", false, true},
		{"directory with entries is left alone", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "netns")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.populate {
				if err := os.WriteFile(filepath.Join(dir, "other-tool-ns"), nil, 0o444); err != nil {
					t.Fatal(err)
				}
			}
			t.Cleanup(func() {
				for {
					if _, ok := mountOf(t, dir); !ok {
						break
					}
					if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
						t.Errorf("unmount %s: %v", dir, err)
						break
					}
				}
			})
			for i := 0; i < 2; i++ { // idempotent
				if err := ensureRunDir(dir); err != nil {
					t.Fatal(err)
				}
			}
			opts, ok := mountOf(t, dir)
			if ok != tc.wantMount {
				t.Fatalf("mount point: %v, want %v", ok, tc.wantMount)
			}
			if ok && !strings.Contains(opts, "shared:") {
				t.Errorf("mount at %s is not shared: %q", dir, opts)
			}
		})
	}
}
