//go:build !linux || !(386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64)

package nslb

import "fmt"

var errPlatform = fmt.Errorf("%w: the L4 load balancer needs Linux on a little-endian CPU (only those BPF objects are committed)", ErrNotSupported)

// LB is not available on this platform.
type LB struct{}

// LoadLB reports ErrNotSupported on this platform.
func LoadLB(LBConfig) (*LB, error) { return nil, errPlatform }

func (*LB) Attach(func(func() error) error) error { return errPlatform }
func (*LB) Detach() error                         { return nil }
func (*LB) SetFirewall(bool) error                { return errPlatform }
func (*LB) Counters() (LBCounters, error)         { return LBCounters{}, errPlatform }
func (*LB) FirewallDropsByCPU() ([]uint64, error) { return nil, errPlatform }
func (*LB) Close() error                          { return nil }

// Worker is not available on this platform.
type Worker struct{}

// LoadWorker reports ErrNotSupported on this platform.
func LoadWorker(WorkerConfig) (*Worker, error) { return nil, errPlatform }

func (*Worker) Attach(func(func() error) error, int, []int) error { return errPlatform }
func (*Worker) Detach() error                                     { return nil }
func (*Worker) SetFirewall(bool) error                            { return errPlatform }
func (*Worker) Counters() (WorkerCounters, error)                 { return WorkerCounters{}, errPlatform }
func (*Worker) Close() error                                      { return nil }

// Probe reports ErrNotSupported on this platform.
func Probe() error { return errPlatform }
