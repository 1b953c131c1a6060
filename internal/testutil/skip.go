package testutil

import (
	"errors"
	"os"
	"testing"
)

// SkipUnlessRoot skips a test that needs root (namespaces, netlink, BPF).
func SkipUnlessRoot(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("needs root: creates network namespaces and links")
	}
}

// SkipIfNotSupported skips the test if err wraps sentinel (a package's
// ErrNotSupported) and fails it if err is the bare sentinel, which would
// say nothing about what is missing (as cilium/ebpf's testutils do). Other
// non-nil errors fail the test.
func SkipIfNotSupported(tb testing.TB, err, sentinel error) {
	tb.Helper()
	if err == nil {
		return
	}
	if err == sentinel {
		tb.Fatal("unwrapped ErrNotSupported: add what is not supported")
	}
	if errors.Is(err, sentinel) {
		tb.Skip(err.Error())
	}
	tb.Fatal(err)
}
