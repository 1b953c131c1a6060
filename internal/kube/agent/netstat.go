package agent

import (
	"fmt"
	"os"
	"time"

	"github.com/cnibench/cnibench/internal/netstat"
)

// Netstat is the TCP/IP counters of the network namespace the probe runs
// in (a pod's, or a node's for a host-network pod), as /proc/net/netstat
// and /proc/net/snmp give them ("TcpExt:PAWSTimewait", "Tcp:RetransSegs",
// …; unsigned counters only).
type Netstat struct {
	Schema       string            `json:"schema"`
	TimeUnixNano int64             `json:"time_unix_nano"`
	Counters     map[string]uint64 `json:"counters"`
	Error        string            `json:"error,omitempty"`
}

// ReadNetstat reads the counters of this process's network namespace
// (procDir is /proc in production).
func ReadNetstat(procDir string) Netstat {
	n := Netstat{Schema: SchemaNetstat, TimeUnixNano: time.Now().UnixNano(), Counters: map[string]uint64{}}
	for _, f := range []string{"net/netstat", "net/snmp"} {
		b, err := os.ReadFile(procDir + "/self/" + f)
		if err != nil {
			n.Error = fmt.Sprintf("read %s: %v", f, err)
			return n
		}
		m, err := netstat.Parse(string(b))
		if err != nil {
			n.Error = fmt.Sprintf("parse %s: %v", f, err)
			return n
		}
		for k, v := range m {
			n.Counters[k] = v
		}
	}
	return n
}
