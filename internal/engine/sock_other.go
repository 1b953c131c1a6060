//go:build !linux

package engine

import "fmt"

// Without Linux no flow opens a raw socket (startFlows refuses), so there is
// never a descriptor to shut down or close.
func shutdownFD(int) {}

func closeFD(int) {}

// pathMTU: IP_MTU/IPV6_MTU of a connected socket (sock_linux.go).
func pathMTU(int, bool) (int, error) {
	return 0, fmt.Errorf("the path MTU (IP_MTU) needs Linux: %w", ErrNotSupported)
}
