//go:build !linux

package hostinfo

import "errors"

// ReadCgroupCPU: cgroups are Linux's.
func ReadCgroupCPU(dir string) (CgroupCPU, error) {
	return CgroupCPU{}, errors.New("cgroup CPU accounting needs Linux")
}

// CgroupPIDs: cgroups are Linux's.
func CgroupPIDs(dir string) (map[int]bool, error) {
	return nil, errors.New("cgroups need Linux")
}
