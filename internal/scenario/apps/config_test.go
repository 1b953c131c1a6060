package apps

import (
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// The daemons' configurations are golden files (go test -update rewrites
// them): every path in the daemon's directory, the server pod's address
// and the scenario's ports.
func TestConfigGolden(t *testing.T) {
	l := newLayout("/tmp/cnibench-apps-http-1")
	ip := netip.MustParseAddr("10.244.1.10")
	for _, tc := range []struct {
		name, got string
	}{
		{"nginx.conf", nginxConf(l, ip)},
		{"vsftpd.conf", vsftpdConf(l, ip)},
		{"sshd_config", sshdConf(l, ip)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join("testdata", tc.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(tc.got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if tc.got != string(want) {
				t.Errorf("%s differs from %s (go test -update rewrites it):\n%s", tc.name, path, tc.got)
			}
		})
	}
}
