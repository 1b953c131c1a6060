package client

import (
	"fmt"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/window"
)

// readsTCPInfo reports whether test's client flows are long-lived TCP
// connections whose TCP_INFO the window reads. tcp_crr's are not: each
// lives for one transaction, so there is nothing open to read at the
// edges.
func readsTCPInfo(test string) bool { return test == engine.TCPStream || test == engine.TCPRR }

// tcpEdge reads TCP_INFO on every flow's socket.
func (w *workload) tcpEdge() window.TCPEdge {
	e := window.TCPEdge{Flows: make([]window.TCPInfo, len(w.flows))}
	for i := range w.flows {
		e.Flows[i].FD = -1
		fd := w.flows[i].fd.Load()
		if fd < 0 {
			continue
		}
		ti, err := readTCPInfo(int(fd))
		if err != nil {
			e.Unread++
			if e.Err == nil {
				e.Err = err
			}
			continue
		}
		ti.FD = int(fd)
		e.Flows[i] = ti
	}
	return e
}

// errTCPInfoUnsupported is returned by readTCPInfo where TCP_INFO does
// not exist.
var errTCPInfoUnsupported = fmt.Errorf("TCP_INFO needs Linux: %w", engine.ErrNotSupported)
