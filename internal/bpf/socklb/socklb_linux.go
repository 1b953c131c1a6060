//go:build linux && (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64)

// The build constraint matches the generated socklb_bpfel.go (only the
// little-endian object is committed); socklb_other.go covers the rest.

package socklb

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/bpf/mapval"

	"github.com/cnibench/cnibench/internal/bpf/bpflink"
)

// LB is the loaded programs and maps; while attached, their cgroup links.
// Its methods are for one goroutine at a time.
type LB struct {
	objs   socklbObjects
	links  []link.Link
	path   string
	closed bool
}

// Load creates the maps for services (sized to them) and loads the four
// programs. Nothing is attached yet (Attach). On error nothing is left.
func Load(services []Service) (*LB, error) {
	keys, vals, bes, err := entries(services)
	if err != nil {
		return nil, err
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("%w: remove memlock rlimit: %w", ErrNotSupported, err)
	}
	spec, err := loadSocklb()
	if err != nil {
		return nil, fmt.Errorf("parse socklb BPF object: %w", err)
	}
	spec.Maps["services"].MaxEntries = uint32(max(len(keys), 1))
	spec.Maps["backends"].MaxEntries = uint32(max(len(bes), 1))
	lb := &LB{}
	if err := spec.LoadAndAssign(&lb.objs, nil); err != nil {
		if errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EINVAL) {
			return nil, fmt.Errorf("%w: load socklb programs: %w", ErrNotSupported, err)
		}
		return nil, fmt.Errorf("load socklb programs: %w", err)
	}
	for i, b := range bes {
		if err := lb.objs.Backends.Update(uint32(i), b, ebpf.UpdateAny); err != nil {
			return nil, errors.Join(fmt.Errorf("fill backends: %w", err), lb.Close())
		}
	}
	if len(keys) > 0 {
		if _, err := lb.objs.Services.BatchUpdate(keys, vals, nil); err != nil {
			return nil, errors.Join(fmt.Errorf("fill services: %w", err), lb.Close())
		}
	}
	return lb, nil
}

// Attach attaches the programs to the cgroup v2 directory at path: they act
// on sockets of processes in it (and its descendants).
func (lb *LB) Attach(path string) error {
	if len(lb.links) > 0 {
		return fmt.Errorf("attach socklb to %s: already attached to %s", path, lb.path)
	}
	for _, p := range []struct {
		prog   *ebpf.Program
		attach ebpf.AttachType
	}{
		{lb.objs.Sock4Connect, ebpf.AttachCGroupInet4Connect},
		{lb.objs.Sock4Sendmsg, ebpf.AttachCGroupUDP4Sendmsg},
		{lb.objs.Sock4Recvmsg, ebpf.AttachCGroupUDP4Recvmsg},
		{lb.objs.Sock4Getpeername, ebpf.AttachCgroupInet4GetPeername},
	} {
		l, err := link.AttachCgroup(link.CgroupOptions{Path: path, Attach: p.attach, Program: p.prog})
		if err != nil {
			err = fmt.Errorf("attach %v to cgroup %s: %w", p.attach, path, err)
			if errors.Is(err, ebpf.ErrNotSupported) {
				err = fmt.Errorf("%w: %w", ErrNotSupported, err)
			}
			return errors.Join(err, lb.Detach())
		}
		lb.links = append(lb.links, l)
	}
	lb.path = path
	return nil
}

// Detach removes the cgroup links; the maps stay.
func (lb *LB) Detach() error {
	err := bpflink.CloseAll(lb.links)
	lb.links = nil
	if err != nil {
		return fmt.Errorf("detach socklb from %s: %w", lb.path, err)
	}
	return nil
}

// Counters sums the per-CPU counters.
func (lb *LB) Counters() (Counters, error) {
	c, err := mapval.SumPerCPU(lb.objs.Counters, cntMax)
	if err != nil {
		return Counters{}, fmt.Errorf("socklb: %w", err)
	}
	return Counters{Forward: c[cntForward], Reverse: c[cntReverse], NoBackend: c[cntNoBackend]}, nil
}

// Close detaches and frees everything; it may be called more than once.
func (lb *LB) Close() error {
	if lb.closed {
		return nil
	}
	lb.closed = true
	return errors.Join(lb.Detach(), lb.objs.Close())
}

// Probe reports whether this machine can run the socket load balancer:
// cgroup sock_addr programs, LRU hash maps and loading. (Attaching needs a
// cgroup v2 directory, which the caller owns.) It returns nil or an error
// wrapping ErrNotSupported that says why.
func Probe() error {
	if err := features.HaveProgramType(ebpf.CGroupSockAddr); err != nil {
		return fmt.Errorf("%w: cgroup sock_addr BPF programs: %w", ErrNotSupported, err)
	}
	if err := features.HaveMapType(ebpf.LRUHash); err != nil {
		return fmt.Errorf("%w: BPF map type %s: %w", ErrNotSupported, ebpf.LRUHash, err)
	}
	lb, err := Load(nil)
	if err != nil {
		if errors.Is(err, ErrNotSupported) {
			return err
		}
		return fmt.Errorf("%w: %w", ErrNotSupported, err)
	}
	return lb.Close()
}
