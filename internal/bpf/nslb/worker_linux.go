//go:build linux && (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64)

package nslb

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/bpf/mapval"

	"github.com/cnibench/cnibench/internal/bpf/bpflink"
)

// Worker is a worker's loaded DSR programs and maps and, once attached,
// their TCX links. Its methods are for one goroutine at a time.
type Worker struct {
	objs   workerObjects
	links  []link.Link
	closed bool
}

// LoadWorker creates a worker's maps for cfg and loads its programs.
func LoadWorker(cfg WorkerConfig) (*Worker, error) {
	keys, vals, err := workerEntries(cfg.Services)
	if err != nil {
		return nil, err
	}
	allow, err := allowKeys(cfg.Allow)
	if err != nil {
		return nil, err
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("%w: remove memlock rlimit: %w", ErrNotSupported, err)
	}
	spec, err := loadWorker()
	if err != nil {
		return nil, fmt.Errorf("parse worker BPF object: %w", err)
	}
	spec.Maps["services"].MaxEntries = uint32(max(len(keys), 1))
	w := &Worker{}
	if err := spec.LoadAndAssign(&w.objs, nil); err != nil {
		if errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("%w: load worker programs: %w", ErrNotSupported, err)
		}
		return nil, fmt.Errorf("load worker programs: %w", err)
	}
	if err := errors.Join(
		fill("services", w.objs.Services, keys, vals, len(keys)),
		fillAllow(w.objs.Allow, allow),
		putSettings(w.objs.Settings, settingsVal{Firewall: b2u(cfg.Firewall)}),
	); err != nil {
		return nil, errors.Join(err, w.Close())
	}
	return w, nil
}

// Attach attaches worker_ingress at TCX ingress of fromLB (where the LB's
// packets arrive: the external interface, or the VXLAN device) and
// worker_from_pod at TCX ingress of each of fromPods (the node side of the
// backend pods' veths). do runs its function inside the worker's network
// namespace (nil: the caller's thread's).
func (w *Worker) Attach(do func(func() error) error, fromLB int, fromPods []int) error {
	if len(w.links) > 0 {
		return errors.New("attach worker programs: already attached")
	}
	at := []tcxAttachment{{"worker_ingress", w.objs.WorkerIngress, fromLB}}
	for _, idx := range fromPods {
		at = append(at, tcxAttachment{"worker_from_pod", w.objs.WorkerFromPod, idx})
	}
	links, err := attachIngress(do, at)
	w.links = links
	if err != nil {
		return errors.Join(err, w.Detach())
	}
	return nil
}

// Detach removes the TCX links; the maps stay.
func (w *Worker) Detach() error {
	err := bpflink.CloseAll(w.links)
	w.links = nil
	if err != nil {
		return fmt.Errorf("detach worker programs: %w", err)
	}
	return nil
}

// SetFirewall turns the firewall on or off while the programs run.
func (w *Worker) SetFirewall(on bool) error {
	return putSettings(w.objs.Settings, settingsVal{Firewall: b2u(on)})
}

// Counters sums the per-CPU counters.
func (w *Worker) Counters() (WorkerCounters, error) {
	c, err := mapval.SumPerCPU(w.objs.Counters, wkCntMax)
	if err != nil {
		return WorkerCounters{}, fmt.Errorf("worker: %w", err)
	}
	return WorkerCounters{DNAT: c[wkCntDNAT], RevNAT: c[wkCntRevNAT], FirewallDrops: c[wkCntFwDrop]}, nil
}

// Close detaches and frees everything; it may be called more than once.
func (w *Worker) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	return errors.Join(w.Detach(), w.objs.Close())
}
