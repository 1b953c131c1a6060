// Package internal holds what every floor of cnibench shares and nothing
// else: the one ErrNotSupported (as cilium/ebpf's internal package does;
// the packages that return it re-export it under their own name).
package internal

import "errors"

// ErrNotSupported is wrapped by every error that means "this host, kernel
// or cluster cannot do that": the suite records such a cell or datapath as
// skipped with the error's reason instead of failing. Match it with
// errors.Is; packages re-export it (lab.ErrNotSupported,
// backend.ErrNotSupported, …), never define their own.
var ErrNotSupported = errors.New("not supported")
