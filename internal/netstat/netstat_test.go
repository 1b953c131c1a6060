package netstat

import "testing"

func TestParseNetstat(t *testing.T) {
	const in = "TcpExt: SyncookiesSent PAWSTimewait TCPSynRetrans\nTcpExt: 0 215 7\nIpExt: InNoRoutes\nIpExt: 3\n"
	m, err := Parse(in)
	if err != nil {
		t.Fatal(err)
	}
	if m["TcpExt:PAWSTimewait"] != 215 || m["TcpExt:TCPSynRetrans"] != 7 || m["IpExt:InNoRoutes"] != 3 {
		t.Errorf("parsed %v", m)
	}
	for _, bad := range []string{"TcpExt: a b\n", "TcpExt: a b\nTcpExt: 1\n", "TcpExt: a\nIpExt: 1\n"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if m, err := Parse("Tcp: MaxConn\nTcp: -1\n"); err != nil || len(m) != 0 {
		t.Errorf("signed counter: %v, %v", m, err)
	}
}

func FuzzParseNetstat(f *testing.F) {
	f.Add("TcpExt: SyncookiesSent PAWSTimewait\nTcpExt: 0 215\n")
	f.Add("a\nb\n")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := Parse(s)
		if err != nil && m != nil {
			t.Fatal("error with a result")
		}
	})
}
