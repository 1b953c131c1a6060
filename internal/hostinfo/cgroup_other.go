//go:build !linux

package hostinfo

import "errors"

// ReadCgroupCPU: cgroups are Linux's.
func ReadCgroupCPU(dir string) (CgroupCPU, error) {
	return CgroupCPU{}, errors.New("cgroup CPU accounting needs Linux")
}
