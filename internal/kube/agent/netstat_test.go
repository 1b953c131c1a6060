package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadNetstat(t *testing.T) {
	// This process's namespace: the counters every kernel has.
	n := ReadNetstat("/proc")
	if n.Error != "" || n.Schema != SchemaNetstat || n.TimeUnixNano == 0 {
		t.Fatalf("%+v", n)
	}
	for _, k := range []string{"TcpExt:PAWSTimewait", "TcpExt:TCPSynRetrans", "Tcp:RetransSegs"} {
		if _, ok := n.Counters[k]; !ok {
			t.Errorf("no %s", k)
		}
	}
	// A fake proc: both files parsed; a missing or bad one is the error.
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "self/net"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, "self/net", name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("netstat", "TcpExt: PAWSTimewait TCPSynRetrans\nTcpExt: 7 3\n")
	if n := ReadNetstat(dir); !strings.Contains(n.Error, "net/snmp") {
		t.Errorf("missing snmp: %+v", n)
	}
	write("snmp", "Tcp: RetransSegs\nTcp: 11\n")
	if n := ReadNetstat(dir); n.Error != "" || n.Counters["TcpExt:PAWSTimewait"] != 7 || n.Counters["Tcp:RetransSegs"] != 11 {
		t.Errorf("%+v", n)
	}
	write("snmp", "Tcp: a b\n")
	if n := ReadNetstat(dir); !strings.Contains(n.Error, "parse net/snmp") {
		t.Errorf("bad snmp: %+v", n)
	}
}
