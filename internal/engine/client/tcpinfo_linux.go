package client

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/engine/window"
)

// readTCPInfo reads a connected TCP socket's TCP_INFO.
func readTCPInfo(fd int) (window.TCPInfo, error) {
	ti, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
	if err != nil {
		return window.TCPInfo{}, fmt.Errorf("getsockopt TCP_INFO: %w", err)
	}
	return window.TCPInfo{
		FD: fd, RTTUs: ti.Rtt, RTTVarUs: ti.Rttvar, MinRTT: ti.Min_rtt, SndCwnd: ti.Snd_cwnd,
		TotalRetrans: ti.Total_retrans, SegsOut: ti.Segs_out, DeliveryRate: ti.Delivery_rate,
	}, nil
}
