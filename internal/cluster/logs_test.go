package cluster

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/cnibench/cnibench/internal/kube/cni"
)

func cniPod(name, uid string, restarts int32) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", UID: types.UID(uid)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "agent"}}},
		Status:     corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "agent", RestartCount: restarts}}},
	}
}

// A window counts the restarts since it opened, with the last
// termination, and the pods that went or were replaced; a log without
// warnings keeps no line and says so.
func TestCNILogWindow(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset(cniPod("cilium-a", "u1", 3), cniPod("cilium-b", "u2", 0), cniPod("cilium-c", "u3", 0))
	refs := []cni.PodRef{{Namespace: "kube-system", Name: "cilium-a"}, {Namespace: "kube-system", Name: "cilium-b"}, {Namespace: "kube-system", Name: "cilium-c"}}
	w := OpenCNILogWindow(ctx, cs, refs, time.Now())

	a := cniPod("cilium-a", "u1", 5)
	a.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137,
		FinishedAt: metav1.NewTime(time.Date(2026, 12, 4, 19, 0, 0, 0, time.UTC))}
	a.Status.ContainerStatuses[0].State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
	if _, err := cs.CoreV1().Pods("kube-system").UpdateStatus(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Pods("kube-system").Delete(ctx, "cilium-c", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ev := w.Evidence(ctx)
	if ev.Restarts != 3 {
		t.Errorf("restarts %d, want 3 (2 of cilium-a, cilium-c gone)", ev.Restarts)
	}
	want := []string{
		"CNI pod kube-system/cilium-a container agent: restarted 2 time(s) since the point started; last terminated: OOMKilled, exit code 137 at 2026-12-04T19:00:00Z; now waiting: CrashLoopBackOff",
		"CNI pod kube-system/cilium-c: gone (deleted, evicted or replaced by one of another name) since the point started",
		// The fake clientset's log of every container is "fake logs": no
		// warning, but the previous instance's last lines are kept.
		"kube-system/cilium-a/agent (previous instance): fake logs",
	}
	if !slices.Equal(ev.Lines, want) {
		t.Errorf("evidence:\n%s\nwant:\n%s", strings.Join(ev.Lines, "\n"), strings.Join(want, "\n"))
	}
	if got := (*CNILogWindow)(nil).Evidence(ctx); len(got.Lines) != 1 || got.Restarts != 0 {
		t.Errorf("nil window: %+v", got)
	}
}

// The lines kept are warnings and errors in the CNIs' formats, the last of
// them, each cut; the last lines are kept whatever their level.
func TestFilterLogLines(t *testing.T) {
	log := strings.Join([]string{
		`time="2026-12-04T19:00:00Z" level=info msg="Policy imported" policyRevision=7`,
		`time="2026-12-04T19:00:01Z" level=warning msg="Unable to update ipcache map entry"`,
		`2026-12-04 19:00:02.000 [INFO][52] felix/int_dataplane.go 1234: Applying dataplane updates`,
		`2026-12-04 19:00:03.000 [ERROR][52] felix/ipsets.go 456: Failed to complete ipset restore error=exit status 1`,
		`E1204 19:00:04.000000       1 reflector.go:147] Failed to watch *v1.GlobalNetworkSet: etcdserver: request is too large`,
		`{"level":"error","msg":"regeneration failed"}`,
		`I1204 19:00:05.000000       1 fine.go:1] all good`,
		"",
		`level=error msg="` + strings.Repeat("x", 400) + `"`,
	}, "\n")
	kept, last, err := filterLogLines(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 5 {
		t.Fatalf("kept %d lines, want 5: %q", len(kept), kept)
	}
	if !strings.Contains(kept[0], "level=warning") || !strings.Contains(kept[1], "[ERROR]") || !strings.HasPrefix(kept[2], "E1204") ||
		!strings.Contains(kept[3], `"level":"error"`) || len(kept[4]) > logLineBytes+len("…") || !strings.HasSuffix(kept[4], "…") {
		t.Errorf("kept %q", kept)
	}
	if len(last) != logPreviousLines || !strings.HasPrefix(last[len(last)-2], "I1204") {
		t.Errorf("last %q", last)
	}
	var many strings.Builder
	for range 100 {
		many.WriteString("level=error msg=again\n")
	}
	kept, _, _ = filterLogLines(strings.NewReader(many.String()))
	if len(kept) != logLinesPerContainer {
		t.Errorf("kept %d of 100 error lines, want the last %d", len(kept), logLinesPerContainer)
	}
}

// WaitReady waits for the window's pods to be Ready, bounded, and names
// those that are not.
func TestCNILogWindowWaitReady(t *testing.T) {
	defer func(d time.Duration) { cniReadyPoll = d }(cniReadyPoll)
	cniReadyPoll = 10 * time.Millisecond
	ctx := context.Background()
	ready := cniPod("cilium-a", "u1", 0)
	ready.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	cs := fake.NewClientset(ready, cniPod("cilium-b", "u2", 0))
	refs := []cni.PodRef{{Namespace: "kube-system", Name: "cilium-a"}, {Namespace: "kube-system", Name: "cilium-b"}}
	w := OpenCNILogWindow(ctx, cs, refs, time.Now())
	took, notReady := w.WaitReady(ctx, 100*time.Millisecond)
	if !slices.Equal(notReady, []string{"kube-system/cilium-b"}) || took < 100*time.Millisecond {
		t.Errorf("not ready %v after %s", notReady, took)
	}
	b := cniPod("cilium-b", "u2", 0)
	b.Status.Conditions = ready.Status.Conditions
	if _, err := cs.CoreV1().Pods("kube-system").UpdateStatus(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if took, notReady := w.WaitReady(ctx, time.Minute); len(notReady) != 0 || took > 10*time.Second {
		t.Errorf("not ready %v after %s", notReady, took)
	}
}

// A long line keeps its error field, which says what failed, past the cut.
func TestCutLineKeepsTheError(t *testing.T) {
	long := strings.Repeat("x", 400)
	tests := []struct {
		name, in   string
		want       []string // substrings of the result
		maxLen     int
		wantSuffix string
	}{
		{"short", "level=warn msg=ok", []string{"level=warn msg=ok"}, logLineBytes, ""},
		{"long, no error field", long, []string{strings.Repeat("x", logLineBytes)}, logLineBytes + len("…"), "…"},
		{"error past the cut", `level=error msg="Endpoint regeneration failed" ` + long + ` error="policy computation result has stale revision"`,
			[]string{`level=error msg="Endpoint regeneration failed"`, `error="policy computation result has stale revision"`}, logLineBytes + 2*len("…") + 1, ""},
		{"error early", `level=error error="boom" ` + long, []string{`error="boom"`}, logLineBytes + len("…"), "…"},
	}
	for _, tt := range tests {
		got := cutLine(tt.in)
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: cutLine = %q, lacks %q", tt.name, got, w)
			}
		}
		if len(got) > tt.maxLen {
			t.Errorf("%s: %d bytes, want at most %d", tt.name, len(got), tt.maxLen)
		}
		if tt.wantSuffix != "" && !strings.HasSuffix(got, tt.wantSuffix) {
			t.Errorf("%s: %q does not end in %q", tt.name, got, tt.wantSuffix)
		}
	}
}

// The log's head and end are merged without repeating a line both hold;
// a line as long as the read's bound is read, not refused.
func TestMergeKeptAndLongLine(t *testing.T) {
	if got := mergeKept([]string{"a", "b"}, []string{"b", "c"}); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("mergeKept = %q", got)
	}
	if got := mergeKept(nil, []string{"c"}); !slices.Equal(got, []string{"c"}) {
		t.Errorf("mergeKept(nil, c) = %q", got)
	}
	long := `level=error msg="` + strings.Repeat("x", logBytesPerContainer-len(`level=error msg="`)) // exactly the read's bound
	kept, _, err := filterLogLines(strings.NewReader(long))
	if err != nil || len(kept) != 1 {
		t.Errorf("a %d-byte line: kept %d, err %v", len(long), len(kept), err)
	}
}
