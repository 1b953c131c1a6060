//go:build !linux

package egress

import "fmt"

// ownTarget: filters need Linux.
func ownTarget(string) (Target, func(), error) {
	return Target{}, nil, fmt.Errorf("a pod filter needs Linux: %w", ErrNotSupported)
}
