package cluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/kube/cni"
)

// The CNI's own account of a point's window, for the evidence of a point
// that failed (Access.CNILogs): restarts of its pods' containers since the
// window opened, and the warning and error lines of their logs, bounded.

// Bounds of what a window reads and keeps.
const (
	// logPods bounds the CNI pods read (a two-node run has two agents and
	// an operator or two).
	logPods = 8
	// logBytesPerContainer bounds the log read from one container
	// (PodLogOptions.LimitBytes): at 1 M CIDRs an agent may log a line per
	// chunk or per entry.
	logBytesPerContainer = 1 << 20
	// logLinesPerContainer and logLines bound the lines kept, the last ones
	// of each container and of all; logLineBytes cuts each.
	logLinesPerContainer = 15
	logLines             = 40
	logLineBytes         = 300
	// logPreviousLines are the last lines of a restarted container's
	// previous instance kept whatever their level (its dying words).
	logPreviousLines = 5
	// logTailLines are the last lines of a container's log read besides
	// its first logBytesPerContainer since the window opened: an agent
	// that fails late in a long wait while logging heavily (Felix logs
	// its whole ipset input when a restore fails) says why at the end,
	// megabytes after the head.
	logTailLines = 200
	// logWindowSlack is taken off the window's start for the nodes' clocks.
	logWindowSlack = 2 * time.Second
	// logTimeout bounds reading the evidence of one window.
	logTimeout = 45 * time.Second
)

// logLevel matches the lines kept: klog's W/E/F prefixes (W1204 …),
// logfmt and JSON levels, Go panics and the words themselves.
var logLevel = regexp.MustCompile(`(?i)(^[WEF]\d{4} |level[=:]"?(warn|warning|error|fatal|panic)|"level":"(warn|warning|error|fatal|panic)"|\b(error|errors|failed|failure|fatal|panic|warning|oom|killed|refused|too large|exceeded)\b)`)

// CNILogWindow is a window over the CNI's pods opened at a point's start
// (Access.CNILogs); Evidence reads what they did since.
type CNILogWindow struct {
	cs    kubernetes.Interface
	pods  []cni.PodRef
	since time.Time
	// counts are the containers' restart counts at the start, by
	// "namespace/pod/container" (absent: could not be read).
	counts map[string]int32
	// uids are the pods' UIDs at the start (a replaced pod has another).
	uids map[string]string
}

// CNIEvidence is what a window found.
type CNIEvidence struct {
	// Restarts counts the container restarts (and pods replaced) in the
	// window.
	Restarts int
	// Lines are the facts, one per line: restarts with their last state,
	// then the kept log lines, "namespace/pod/container: line".
	Lines []string
}

// cniLogs opens a window over the CNI's pods (none: a window that finds
// nothing and says why).
func (d *Deployment) cniLogs(ctx context.Context) *CNILogWindow {
	return OpenCNILogWindow(ctx, d.b.cs, d.cni.Pods, time.Now())
}

// OpenCNILogWindow opens a window over pods at since, reading their
// containers' restart counts (what cannot be read is left out and the
// later read says so).
func OpenCNILogWindow(ctx context.Context, cs kubernetes.Interface, pods []cni.PodRef, since time.Time) *CNILogWindow {
	w := &CNILogWindow{cs: cs, pods: pods[:min(len(pods), logPods)], since: since, counts: map[string]int32{}, uids: map[string]string{}}
	ctx, cancel := context.WithTimeout(ctx, logTimeout)
	defer cancel()
	for _, p := range w.readPods(ctx) {
		w.uids[p.Namespace+"/"+p.Name] = string(p.UID)
		for _, s := range p.Status.ContainerStatuses {
			w.counts[p.Namespace+"/"+p.Name+"/"+s.Name] = s.RestartCount
		}
	}
	return w
}

// readPods reads the window's pods (listed per namespace, with the pods
// list right cnibench has in the CNI's namespaces), those it finds.
func (w *CNILogWindow) readPods(ctx context.Context) []corev1.Pod {
	var out []corev1.Pod
	byNS := map[string][]string{}
	for _, p := range w.pods {
		byNS[p.Namespace] = append(byNS[p.Namespace], p.Name)
	}
	for _, ns := range slices.Sorted(maps.Keys(byNS)) {
		var l *corev1.PodList
		err := kube.Call(ctx, "list the CNI's pods in "+ns, func(ctx context.Context) (err error) {
			l, err = w.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			return err
		})
		if err != nil {
			continue
		}
		for _, p := range l.Items {
			if slices.Contains(byNS[ns], p.Name) {
				out = append(out, p)
			}
		}
	}
	return out
}

// Restarts reads the window's restarts: the containers that restarted
// since it opened (with their last termination) and the pods that went or
// were replaced, one line each.
func (w *CNILogWindow) Restarts(ctx context.Context) CNIEvidence {
	ev, _ := w.restarts(ctx)
	return ev
}

// restarts is Restarts, with the pods found and, by "namespace/pod", the
// containers that restarted.
func (w *CNILogWindow) restarts(ctx context.Context) (CNIEvidence, []corev1.Pod) {
	var ev CNIEvidence
	if w == nil || len(w.pods) == 0 {
		return ev, nil
	}
	ctx, cancel := context.WithTimeout(ctx, logTimeout)
	defer cancel()
	pods := w.readPods(ctx)
	for _, ref := range w.pods {
		id := ref.Namespace + "/" + ref.Name
		i := slices.IndexFunc(pods, func(p corev1.Pod) bool { return p.Namespace == ref.Namespace && p.Name == ref.Name })
		if i < 0 {
			ev.Restarts++
			ev.Lines = append(ev.Lines, "CNI pod "+id+": gone (deleted, evicted or replaced by one of another name) since the point started")
			continue
		}
		p := pods[i]
		if uid, ok := w.uids[id]; ok && uid != string(p.UID) {
			ev.Restarts++
			ev.Lines = append(ev.Lines, "CNI pod "+id+": replaced (new UID) since the point started")
		}
		for _, s := range p.Status.ContainerStatuses {
			if before, known := w.counts[id+"/"+s.Name]; known && s.RestartCount > before {
				ev.Restarts += int(s.RestartCount - before)
				ev.Lines = append(ev.Lines, fmt.Sprintf("CNI pod %s container %s: restarted %d time(s) since the point started%s%s",
					id, s.Name, s.RestartCount-before, lastTerminated(s), waiting(s)))
			}
		}
	}
	return ev, pods
}

// Evidence reads the window: its Restarts, and the warning and error
// lines the CNI's containers logged since it opened (and the last lines of
// a restarted container's previous instance), bounded: the last lines of
// each container and of all. What could not be read is said in a line of
// its own.
func (w *CNILogWindow) Evidence(ctx context.Context) CNIEvidence {
	if w == nil || len(w.pods) == 0 {
		return CNIEvidence{Lines: []string{"CNI logs: the CNI runs no pods cnibench knows of"}}
	}
	ev, pods := w.restarts(ctx)
	ctx, cancel := context.WithTimeout(ctx, logTimeout)
	defer cancel()
	var logs []string
	for _, p := range pods {
		for _, s := range p.Status.ContainerStatuses {
			logs = append(logs, w.containerLines(ctx, p, s.Name, false)...)
			if before, known := w.counts[p.Namespace+"/"+p.Name+"/"+s.Name]; known && s.RestartCount > before {
				logs = append(logs, w.containerLines(ctx, p, s.Name, true)...)
			}
		}
	}
	if len(logs) > logLines {
		ev.Lines = append(ev.Lines, fmt.Sprintf("CNI logs: %d warning/error lines since the point started, the last %d:", len(logs), logLines))
		logs = logs[len(logs)-logLines:]
	} else if len(logs) == 0 {
		ev.Lines = append(ev.Lines, "CNI logs: no warning or error line since the point started")
	}
	ev.Lines = append(ev.Lines, logs...)
	return ev
}

// containerLines reads one container's log since the window opened (or,
// previous, its previous instance's) and keeps the warning and error
// lines (the previous instance's last lines whatever their level),
// bounded; an unreadable log is one line saying why.
func (w *CNILogWindow) containerLines(ctx context.Context, p corev1.Pod, container string, previous bool) []string {
	prefix := p.Namespace + "/" + p.Name + "/" + container
	opts := &corev1.PodLogOptions{Container: container, LimitBytes: ptr(int64(logBytesPerContainer))}
	if previous {
		prefix += " (previous instance)"
		opts.Previous = true
	} else {
		opts.SinceTime = &metav1.Time{Time: w.since.Add(-logWindowSlack)}
	}
	kept, last, whole, err := w.readLog(ctx, p, prefix, opts)
	if err != nil {
		return []string{prefix + ": log not read: " + firstLine(err.Error())}
	}
	if previous {
		return withPrefix(prefix, mergeKept(kept, last))
	}
	if whole {
		return withPrefix(prefix, kept)
	}
	// The log's end too (bounded the same way), for what the head did not
	// reach.
	tail := *opts
	tail.TailLines = ptr(int64(logTailLines))
	tkept, _, _, err := w.readLog(ctx, p, prefix+" (its end)", &tail)
	if err != nil {
		return append(withPrefix(prefix, kept), prefix+": end of the log not read: "+firstLine(err.Error()))
	}
	return withPrefix(prefix, mergeKept(kept, tkept))
}

// readLog reads one container's log with opts and filters it
// (filterLogLines); whole reports that the read ended before opts'
// byte bound, so it holds the log to its end.
func (w *CNILogWindow) readLog(ctx context.Context, p corev1.Pod, what string, opts *corev1.PodLogOptions) (kept, last []string, whole bool, err error) {
	err = kube.Call(ctx, "read the log of "+what, func(ctx context.Context) error {
		kept, last = nil, nil
		rc, err := w.cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, opts).Stream(ctx)
		if err != nil {
			return err
		}
		defer rc.Close()
		cr := &countingReader{r: rc}
		kept, last, err = filterLogLines(cr)
		whole = opts.LimitBytes == nil || cr.n < *opts.LimitBytes
		return err
	})
	return kept, last, whole, err
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}

// mergeKept is the head's kept lines, then the tail's that the head does
// not hold (the two reads overlap on a short log).
func mergeKept(head, tail []string) []string {
	out := slices.Clone(head)
	for _, l := range tail {
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}

// withPrefix prefixes each line with the container's name.
func withPrefix(prefix string, lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = prefix + ": " + l
	}
	return out
}

// filterLogLines reads a log and returns its warning and error lines (the
// last logLinesPerContainer) and its last logPreviousLines lines, each
// cut to logLineBytes.
func filterLogLines(r io.Reader) (kept, last []string, err error) {
	sc := bufio.NewScanner(r)
	// A line as long as the read's byte bound is still one line, not
	// bufio.ErrTooLong (Felix logs an ipset restore's whole input).
	sc.Buffer(make([]byte, 64<<10), logBytesPerContainer+64<<10)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" {
			continue
		}
		l = cutLine(l)
		last = appendLast(last, l, logPreviousLines)
		if logLevel.MatchString(l) {
			kept = appendLast(kept, l, logLinesPerContainer)
		}
	}
	return kept, last, sc.Err()
}

// appendLast appends s to list, keeping its last n.
func appendLast(list []string, s string, n int) []string {
	list = append(list, s)
	if len(list) > n {
		list = list[len(list)-n:]
	}
	return list
}

// errField finds a log line's error field (logfmt `error=`, `err=`), the
// part of a long line that says what failed.
var errField = regexp.MustCompile(`\b(error|err)=`)

// cutLine cuts a log line to logLineBytes (at a rune boundary). A line
// whose error field starts past the cut keeps its head and that field,
// each cut to half ("head … error=\"…\"").
func cutLine(s string) string {
	if len(s) <= logLineBytes {
		return s
	}
	if loc := errField.FindStringIndex(s); loc != nil && loc[0] > logLineBytes/2 {
		return cutAt(s, logLineBytes/2) + " " + cutAt(s[loc[0]:], logLineBytes/2)
	}
	return cutAt(s, logLineBytes)
}

// cutAt cuts s to n bytes at a rune boundary, marked with "…".
func cutAt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// lastTerminated describes a container's last termination.
func lastTerminated(s corev1.ContainerStatus) string {
	t := s.LastTerminationState.Terminated
	if t == nil {
		return ""
	}
	msg := fmt.Sprintf("; last terminated: %s, exit code %d", orWord(t.Reason, "no reason"), t.ExitCode)
	if t.Signal != 0 {
		msg += fmt.Sprintf(", signal %d", t.Signal)
	}
	if !t.FinishedAt.IsZero() {
		msg += " at " + t.FinishedAt.UTC().Format(time.RFC3339)
	}
	if m := strings.TrimSpace(t.Message); m != "" {
		msg += ": " + cutLine(firstLine(m))
	}
	return msg
}

// waiting says why a container waits (CrashLoopBackOff …).
func waiting(s corev1.ContainerStatus) string {
	if w := s.State.Waiting; w != nil && w.Reason != "" {
		return "; now waiting: " + w.Reason
	}
	return ""
}

func orWord(s, w string) string {
	if s == "" {
		return w
	}
	return s
}

func ptr[T any](v T) *T { return &v }

// cniReadyPoll is how often WaitReady looks (tests shorten it).
var cniReadyPoll = 2 * time.Second

// WaitReady waits, at most timeout, until every pod of the window that
// still exists is Ready (after a failure, so that the next point does not
// measure a CNI still restarting), and returns how long it took and the
// pods not Ready at the end (none: ready).
func (w *CNILogWindow) WaitReady(ctx context.Context, timeout time.Duration) (took time.Duration, notReady []string) {
	if w == nil || len(w.pods) == 0 {
		return 0, nil
	}
	t0 := time.Now()
	deadline := t0.Add(timeout)
	for {
		notReady = notReady[:0]
		for _, p := range w.readPods(ctx) {
			if !podReady(p) {
				notReady = append(notReady, p.Namespace+"/"+p.Name)
			}
		}
		if len(notReady) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return time.Since(t0), notReady
		}
		select {
		case <-time.After(cniReadyPoll):
		case <-ctx.Done():
		}
	}
}

// podReady reports a pod's Ready condition.
func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
