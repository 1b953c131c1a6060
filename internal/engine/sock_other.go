//go:build !linux

package engine

import "fmt"

// Without Linux no flow opens a raw socket (startFlows refuses), so there is
// never a descriptor to shut down or close.
func shutdownFD(int) {}

func closeFD(int) {}

// tcpRetrans: TCP_INFO's retransmit counter (sock_linux.go).
func tcpRetrans(int) (uint32, error) {
	return 0, fmt.Errorf("TCP retransmits (TCP_INFO) need Linux: %w", ErrNotSupported)
}

// pathMTU: IP_MTU/IPV6_MTU of a connected socket (sock_linux.go).
func pathMTU(int, bool) (int, error) {
	return 0, fmt.Errorf("the path MTU (IP_MTU) needs Linux: %w", ErrNotSupported)
}
