package l4lb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/scenario/l4lb/lbnet"
)

// placeCPUs applies the point's CPU placement. split: the backends must
// be pinned to one CPU (the suite's --pin same, which pins the client
// there too); the LB's receive processing goes to another CPU this
// process may use, every other member's to the backends' CPU, and the
// flood's sender runs there too. shared: no steering.
func (p *prepared) placeCPUs() error {
	if !p.spec.split {
		p.config["lb_cpu_placement"] = "shared: no receive steering (a veth's packet is processed on the CPU that sent it)"
		if p.lb.CPUSplit().On {
			return p.lb.SetCPUSplit(lbnet.CPUSplit{})
		}
		return nil
	}
	others := -1
	for _, srv := range p.s.servers {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", srv.PID))
		if err != nil {
			return fmt.Errorf("--lb-cpu split: backend's CPUs: %w", err)
		}
		cpus, err := cpusAllowed(string(b))
		if err != nil {
			return fmt.Errorf("--lb-cpu split: backend's CPUs: %w", err)
		}
		if len(cpus) != 1 || (others >= 0 && cpus[0] != others) {
			return fmt.Errorf("--lb-cpu split: the backends may run on CPUs %v: run the suite with --pin same (client and backends on one CPU, the LB's receive processing on another)", cpus)
		}
		others = cpus[0]
	}
	if others < 0 {
		return errors.New("--lb-cpu split: no backend running")
	}
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		return fmt.Errorf("--lb-cpu split: read CPU affinity: %w", err)
	}
	lbCPU := -1
	for c := 0; c < 1024 && lbCPU < 0; c++ {
		if allowed.IsSet(c) && c != others {
			lbCPU = c
		}
	}
	if lbCPU < 0 {
		return fmt.Errorf("--lb-cpu split needs a second CPU besides %d: use --lb-cpu shared", others)
	}
	if err := p.lb.SetCPUSplit(lbnet.CPUSplit{On: true, LB: lbCPU, Others: others}); err != nil {
		return fmt.Errorf("--lb-cpu split: %w", err)
	}
	p.floodCPU = others
	p.config["lb_cpu_placement"] = fmt.Sprintf("split: the LB node's receive processing (RPS of its devices) on CPU %d; "+
		"the other members' devices, the backends, the flood's sender and (with --pin same) the client on CPU %d", lbCPU, others)
	if !slices.Contains([]int{0, 1}, lbCPU) {
		p.config["lb_cpu_placement"] += " (a host with more CPUs: the others stay idle)"
	}
	return nil
}

// startFlood starts the point's SYN flood (nothing without one); the
// function it returns stops it and returns what was sent.
func (p *prepared) startFlood() func() (lbnet.SYNFloodResult, error) {
	if p.spec.flood == 0 {
		return func() (lbnet.SYNFloodResult, error) { return lbnet.SYNFloodResult{}, nil }
	}
	ctx, cancel := context.WithCancel(context.Background())
	type floodResult struct {
		r   lbnet.SYNFloodResult
		err error
	}
	done := make(chan floodResult, 1)
	go func() {
		r, err := p.lb.SYNFlood(ctx, p.spec.flood, p.floodCPU)
		done <- floodResult{r, err}
	}()
	return func() (lbnet.SYNFloodResult, error) {
		cancel()
		fr := <-done
		if fr.err != nil {
			return fr.r, fmt.Errorf("syn flood: %w", fr.err)
		}
		return fr.r, nil
	}
}
