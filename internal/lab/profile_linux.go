package lab

import (
	"context"
	"fmt"
	"strconv"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/profile"
)

// CanProfile says whether this kernel lets the lab's clients sample every
// CPU (perf_event_open as root): the lab's namespaces share the host's
// kernel, so one probe answers for every client (backend.CPUProfiler).
func (d *Deployment) CanProfile() error { return profile.Probe() }

// RunProfiled runs a client that samples every CPU during its measured
// window (`cnibench run --cpu-profile FILE`): the lab's namespaces share
// one kernel, so the client's own profile covers both nodes, the softirq
// work of the datapath and the servers.
func (d *Deployment) RunProfiled(ctx context.Context, place backend.Place, args []string, file string, hz int) ([]byte, []byte, error) {
	if file == "" {
		return nil, nil, fmt.Errorf("lab: no profile file")
	}
	args = append(args[:len(args):len(args)], "--cpu-profile", file, "--cpu-profile-hz", strconv.Itoa(hz))
	return d.Run(ctx, place, args)
}
