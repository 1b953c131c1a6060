//go:build !linux

package nscpu

import "fmt"

// NetnsInode reports ErrNotSupported: network namespaces are Linux's.
func NetnsInode(int) (uint64, error) {
	return 0, fmt.Errorf("%w: network namespaces need Linux", ErrNotSupported)
}
