package proxies

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/cnibench/cnibench/internal/testutil"
)

// TestConfigAccepted has the real programs check every generated
// configuration (haproxy -c, nginx -t), each in a network namespace of its
// own: nginx -t binds its listen addresses.
func TestConfigAccepted(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	progs := map[string]string{
		HAProxy: testutil.NeedAnyProgram(t, "haproxy", "/usr/sbin/haproxy"),
		Nginx:   testutil.NeedAnyProgram(t, "nginx", "/usr/sbin/nginx"),
	}
	dir := t.TempDir()
	for name, c := range goldenConfigs(dir) {
		t.Run(name, func(t *testing.T) {
			c.Dir = filepath.Join(dir, name)
			c.Listen = netip.MustParseAddrPort("127.0.0.1:15080")
			c.Source = netip.MustParseAddr("127.0.0.1")
			conf, err := c.Render()
			if err != nil {
				t.Fatal(err)
			}
			if err := writeConfig(c, conf); err != nil {
				t.Fatal(err)
			}
			args := []string{"-c", "-f", c.ConfigFile()}
			if c.Kind == Nginx {
				args = append([]string{"-t"}, c.Args()...)
			}
			cmd := exec.Command(progs[c.Kind], args...)
			cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s %v: %v\n%s", c.Kind, args, err, out)
			}
		})
	}
}

func TestLastHost(t *testing.T) {
	for _, tc := range []struct{ prefix, want string }{
		{"198.19.1.0/24", "198.19.1.254"},
		{"198.19.2.0/24", "198.19.2.254"},
		{"10.0.0.0/8", "10.255.255.254"},
		{"10.1.2.3/30", "10.1.2.2"},
	} {
		if got := lastHost(netip.MustParsePrefix(tc.prefix)); got.String() != tc.want {
			t.Errorf("lastHost(%s) = %v, want %s", tc.prefix, got, tc.want)
		}
	}
}

// A dead run's directory is swept, a live one's (this process's) kept.
func TestSweepStaleDirs(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("no true(1):", err)
	}
	dead := filepath.Join(os.TempDir(), fmt.Sprintf("%s%d-1", dirPrefix, cmd.Process.Pid))
	live := filepath.Join(os.TempDir(), fmt.Sprintf("%s%d-2", dirPrefix, os.Getpid()))
	other := filepath.Join(os.TempDir(), dirPrefix+"x-3")
	for _, d := range []string{dead, live, other} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	sweepStaleDirs()
	for d, want := range map[string]bool{dead: false, live: true, other: true} {
		if _, err := os.Stat(d); (err == nil) != want {
			t.Errorf("%s exists %v, want %v", d, err == nil, want)
		}
	}
}
