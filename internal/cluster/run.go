package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/kube"
)

// Run implements backend.Deployment: `cnibench ARGS` by exec in the
// place's pod (the pod's environment carries the run's token).
func (d *Deployment) Run(ctx context.Context, pl backend.Place, args []string) ([]byte, []byte, error) {
	if pp, ok := pl.(pairsPlace); ok {
		// --pairs: every pair's client at once, one merged result.
		return runPairs(ctx, pp, args, func(ctx context.Context, p place, a []string) ([]byte, []byte, error) {
			return d.Run(ctx, p, a)
		})
	}
	p, ok := pl.(place)
	if !ok {
		return nil, nil, fmt.Errorf("kubernetes: cannot run at %v", pl)
	}
	return d.exec(ctx, p.pod, append([]string{"/cnibench"}, args...), nil)
}

// agentJSON runs `cnibench k8s agent ARGS` in a run's pod and decodes its
// JSON output into v.
func (d *Deployment) agentJSON(ctx context.Context, short string, args []string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	stdout, stderr, err := d.exec(ctx, d.name(short), append([]string{"/cnibench", "k8s", "agent"}, args...), nil)
	if err != nil {
		return fmt.Errorf("agent %s in %s: %w (%s)", args[0], short, err, firstLine(string(stderr)))
	}
	if err := json.Unmarshal(stdout, v); err != nil {
		return fmt.Errorf("agent %s in %s: decode its output: %w", args[0], short, err)
	}
	return nil
}

// exec runs cmd in pod's container and returns its output; watch, if not
// nil, sees its stderr as it comes.
func (d *Deployment) exec(ctx context.Context, pod string, cmd []string, watch *lineWatcher) ([]byte, []byte, error) {
	var stdout, stderr bytes.Buffer
	var w io.Writer = &stderr
	if watch != nil {
		w = io.MultiWriter(&stderr, watch)
	}
	err := d.b.exec.Exec(ctx, d.ns, pod, kube.ContainerName, cmd, nil, &stdout, w)
	return stdout.Bytes(), stderr.Bytes(), err
}
