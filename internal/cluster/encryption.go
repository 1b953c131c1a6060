package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/kube/agent"
	"github.com/cnibench/cnibench/internal/kube/nodes"
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
	// Only the run's traffic counts: between the two pods (in clear) or
	// between the two nodes (encapsulated or encrypted), not another
	// workload's on the same interface.
	between := captureBetween(d.pods[podCliA].Status.PodIP, d.pods[podSrvB].Status.PodIP, nodes.InternalIP(d.client), nodes.InternalIP(d.server))
	cctx, cancel := context.WithTimeout(ctx, encCapture+time.Minute)
	defer cancel()
	ready := &lineWatcher{prefix: "ready", seen: make(chan struct{})}
	type capOut struct {
		stdout, stderr []byte
		err            error
	}
	done := make(chan capOut, 1)
	go func() {
		o, e, err := d.exec(cctx, d.name(podHostB), append([]string{"/cnibench", "k8s", "agent", "capture", "--iface", iface, "--duration", encCapture.String()}, between...), ready)
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

// captureBetween are the --between arguments of `agent capture`: the two
// pods' IPs and the two nodes' InternalIPs, each pair only when both are
// known and differ.
func captureBetween(podA, podB, nodeA, nodeB string) []string {
	var out []string
	for _, p := range [][2]string{{podA, podB}, {nodeA, nodeB}} {
		a, errA := netip.ParseAddr(p[0])
		b, errB := netip.ParseAddr(p[1])
		if errA == nil && errB == nil && a.Unmap() != b.Unmap() {
			out = append(out, "--between", a.String()+","+b.String())
		}
	}
	return out
}

// encryptionVerdict judges a capture: the marker seen means clear text;
// none in enough frames, with a tunnel protocol carrying them, means
// encrypted; too few frames prove nothing. With a filter (c.Filter), only
// the frames it matched count: those between the two pods or the two
// nodes.
func encryptionVerdict(c agent.Capture) result.Finding {
	frames, marker, byProto := c.Frames, c.MarkerFrames, c.ByProtocol
	what := "frames"
	if c.Filter != "" {
		frames, marker, byProto = c.MatchedFrames, c.MatchedMarkerFrames, c.MatchedByProtocol
		what = "frames between " + c.Filter
	}
	f := result.Finding{Metrics: map[string]float64{
		"frames": float64(frames), "marker_frames": float64(marker),
	}}
	protos := make([]string, 0, len(byProto))
	for p, n := range byProto {
		protos = append(protos, fmt.Sprintf("%s %d", p, n))
	}
	slices.Sort(protos)
	f.Evidence = append(f.Evidence, fmt.Sprintf("%d %s, %d carrying the payload marker; by protocol: %s", frames, what, marker, strings.Join(protos, ", ")))
	if c.Filter != "" {
		f.Metrics["frames_captured"] = float64(c.Frames)
		line := fmt.Sprintf("%d frames captured in all; the other %d (other workloads, the nodes' other peers) are not judged", c.Frames, c.Frames-min(c.Frames, frames))
		if n := c.MarkerFrames - min(c.MarkerFrames, marker); n > 0 {
			line += fmt.Sprintf(", %d of them carrying the payload marker", n)
		}
		f.Evidence = append(f.Evidence, line)
	}
	switch {
	case marker > 0:
		f.Verdict, f.Summary = "clear", fmt.Sprintf("pod-to-pod traffic crosses the wire unencrypted: the payload marker was seen in %d %s", marker, what)
	case frames < encMinFrames:
		f.Verdict, f.Summary = "inconclusive", fmt.Sprintf("only %d %s were captured (fewer than %d): the stream did not cross this interface", frames, what, encMinFrames)
	default:
		f.Verdict, f.Summary = "encrypted", fmt.Sprintf("no payload marker in %d %s crossing the wire: pod-to-pod traffic is encrypted (or encoded) between the nodes", frames, what)
	}
	return f
}
