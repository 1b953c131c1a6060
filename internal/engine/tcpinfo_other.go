//go:build !linux

package engine

// readTCPInfo: TCP_INFO is Linux's (tcpinfo_linux.go); elsewhere the
// tcp_* metrics are absent.
func readTCPInfo(int) (tcpInfo, error) { return tcpInfo{}, errTCPInfoUnsupported }
