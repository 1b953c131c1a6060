//go:build !linux

package wireguard

import "log/slog"

// DoFunc runs f in a network namespace (Linux only).
type DoFunc func(f func() error) error

// ProbeKernel reports that kernel WireGuard links need Linux.
func ProbeKernel() error { return errOS }

// SetupKernel is not supported outside Linux.
func SetupKernel(DoFunc, Config) error { return errOS }

// DeleteKernel is not supported outside Linux.
func DeleteKernel(DoFunc, string) error { return errOS }

// StartUserspace is not supported outside Linux (the lab's namespaces and
// netlink configuration are Linux's).
func StartUserspace(Config, *slog.Logger) (*Userspace, error) { return nil, errOS }

// ProbeUserspace reports that the userspace tunnel needs Linux here.
func ProbeUserspace() error { return errOS }
