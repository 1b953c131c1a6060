//go:build !linux

package client

import "github.com/cnibench/cnibench/internal/engine/window"

// readTCPInfo: TCP_INFO is Linux's (tcpinfo_linux.go); elsewhere the
// tcp_* metrics are absent.
func readTCPInfo(int) (window.TCPInfo, error) { return window.TCPInfo{}, errTCPInfoUnsupported }
