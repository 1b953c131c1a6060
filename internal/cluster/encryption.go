package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/kube/agent"
	"github.com/cnibench/cnibench/pkg/result"
)

// Encryption check parameters: the capture outlasts the stream, which
// runs once the capture is ready.
const (
	encStream  = 2 * time.Second
	encCapture = 5 * time.Second
	// encMinFrames is the frames a capture must see for "no marker" to
	// mean something.
	encMinFrames = 100
)

// checkEncryption looks for the engine's payload marker on the server
// node's interface (the node-to-node wire) while a pod on the client node
// streams to a pod on the server node: the marker in clear means the pod
// traffic crosses the wire unencrypted.
func (d *Deployment) checkEncryption(ctx context.Context) result.Finding {
	iface := ""
	if d.nodeIfB != nil {
		iface = d.nodeIfB.AddrLink()
	}
	if iface == "" {
		return result.Finding{Verdict: "skipped", Summary: "the server node's interface (holding its InternalIP) could not be found", Evidence: d.upErrors}
	}
	cctx, cancel := context.WithTimeout(ctx, encCapture+time.Minute)
	defer cancel()
	ready := &lineWatcher{prefix: "ready", seen: make(chan struct{})}
	type capOut struct {
		stdout, stderr []byte
		err            error
	}
	done := make(chan capOut, 1)
	go func() {
		o, e, err := d.exec(cctx, d.name(podHostB), []string{"/cnibench", "k8s", "agent", "capture", "--iface", iface, "--duration", encCapture.String()}, ready)
		done <- capOut{o, e, err}
	}()
	var co capOut
	select {
	case <-ready.seen:
	case co = <-done:
		select {
		case <-ready.seen:
			return result.Finding{Verdict: "failed", Summary: "the capture on " + iface + " ended before the stream ran"}
		default:
		}
		return result.Finding{Verdict: "failed", Summary: "the capture on " + iface + " did not start", Evidence: []string{fmt.Sprintf("%v: %s", co.err, firstLine(string(co.stderr)))}}
	case <-cctx.Done():
		return result.Finding{Verdict: "skipped", Summary: "interrupted"}
	}
	target := net.JoinHostPort(d.pods[podSrvB].Status.PodIP, strconv.Itoa(engine.DefaultPort))
	_, serr, err := d.exec(cctx, d.name(podCliA), []string{"/cnibench", "run", "--target", target, "--test", engine.TCPStream,
		"--flows", "1", "--duration", encStream.String(), "--warmup", "0s", "--format", "json", "-q"}, nil)
	streamErr := ""
	if err != nil {
		streamErr = fmt.Sprintf("the stream failed: %v (%s)", err, firstLine(string(serr)))
	}
	co = <-done
	if co.err != nil {
		return result.Finding{Verdict: "failed", Summary: "the capture on " + iface + " failed", Evidence: []string{fmt.Sprintf("%v: %s", co.err, firstLine(string(co.stderr))), streamErr}}
	}
	var c agent.Capture
	if err := json.Unmarshal(bytes.TrimSpace(co.stdout), &c); err != nil {
		return result.Finding{Verdict: "failed", Summary: "the capture's output could not be read", Evidence: []string{err.Error()}}
	}
	f := encryptionVerdict(c)
	f.Labels = map[string]string{"node": d.server.Name, "iface": iface}
	f.Evidence = append([]string{fmt.Sprintf("capture on %s/%s during a %s tcp_stream %s → %s (pod IP %s)", d.server.Name, iface, encStream, podCliA, podSrvB, d.pods[podSrvB].Status.PodIP)}, f.Evidence...)
	if streamErr != "" {
		f.Evidence = append(f.Evidence, streamErr)
	}
	return f
}

// encryptionVerdict judges a capture: the marker seen means clear text;
// none in enough frames, with a tunnel protocol carrying them, means
// encrypted; too few frames prove nothing.
func encryptionVerdict(c agent.Capture) result.Finding {
	f := result.Finding{Metrics: map[string]float64{
		"frames": float64(c.Frames), "marker_frames": float64(c.MarkerFrames),
	}}
	protos := make([]string, 0, len(c.ByProtocol))
	for p, n := range c.ByProtocol {
		protos = append(protos, fmt.Sprintf("%s %d", p, n))
	}
	slices.Sort(protos)
	f.Evidence = append(f.Evidence, fmt.Sprintf("%d frames, %d carrying the payload marker; by protocol: %s", c.Frames, c.MarkerFrames, strings.Join(protos, ", ")))
	switch {
	case c.MarkerFrames > 0:
		f.Verdict, f.Summary = "clear", fmt.Sprintf("pod-to-pod traffic crosses the wire unencrypted: the payload marker was seen in %d frames", c.MarkerFrames)
	case c.Frames < encMinFrames:
		f.Verdict, f.Summary = "inconclusive", fmt.Sprintf("only %d frames were captured (fewer than %d): the stream did not cross this interface", c.Frames, encMinFrames)
	default:
		f.Verdict, f.Summary = "encrypted", fmt.Sprintf("no payload marker in %d frames crossing the wire: pod-to-pod traffic is encrypted (or encoded) between the nodes", c.Frames)
	}
	return f
}
