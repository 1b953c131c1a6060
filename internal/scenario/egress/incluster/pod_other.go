//go:build !linux

package incluster

import (
	"fmt"

	"github.com/cnibench/cnibench/internal/scenario/egress/filter"
)

// ownTarget: filters need Linux.
func ownTarget(string) (filter.Target, func(), error) {
	return filter.Target{}, nil, fmt.Errorf("a pod filter needs Linux: %w", filter.ErrNotSupported)
}
