//go:build !linux

package sock

import "fmt"

// Without Linux no flow opens a raw socket (startFlows refuses), so there is
// never a descriptor to shut down or close.
func Shutdown(int) {}

// Close: see Shutdown.
func Close(int) {}

// PathMTU: IP_MTU/IPV6_MTU of a connected socket (sock_linux.go).
func PathMTU(int, bool) (int, error) {
	return 0, fmt.Errorf("the path MTU (IP_MTU) needs Linux: %w", ErrNotSupported)
}
