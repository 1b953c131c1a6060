package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/pkg/result"
)

// faultPolicy retries fast: 100 ms per attempt, 4 attempts, delays of at
// most 20 ms (a server's Retry-After included).
var faultPolicy = kube.RetryPolicy{CallTimeout: 100 * time.Millisecond, Attempts: 4, Backoff: time.Millisecond, MaxDelay: 20 * time.Millisecond}

// shortClientBounds makes a client run's deadline its measured time plus
// 200 ms, and the grace of an interrupted client 200 ms, for the test.
func shortClientBounds(t *testing.T) {
	g, lo, hi := clientGrace, clientMarginMin, clientMarginMax
	clientGrace, clientMarginMin, clientMarginMax = 200*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond
	t.Cleanup(func() { clientGrace, clientMarginMin, clientMarginMax = g, lo, hi })
}

// faultExec is the fake cluster's exec with `cnibench run` answered by run
// (if set).
type faultExec struct {
	*fakeCluster
	run func(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error
}

func (e faultExec) Exec(ctx context.Context, ns, pod, container string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if e.run != nil && len(cmd) > 1 && cmd[1] == "run" {
		return e.run(ctx, cmd[2:], stdin, stdout)
	}
	return e.fakeCluster.Exec(ctx, ns, pod, container, cmd, stdin, stdout, stderr)
}

// failFirst prepends a reactor on verb resource that fails its first n
// calls with err (after sleeping slow, and, with made, creating the object
// first: the server made it, its answer was lost); it counts the calls.
// Dry runs (the admission check's) pass.
func failFirst(fc *fakeCluster, verb, resource string, n int32, err error, slow time.Duration, made bool) *atomic.Int32 {
	var calls atomic.Int32
	fc.cs.PrependReactor(verb, resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
		if c, ok := a.(k8stesting.CreateActionImpl); ok && len(c.CreateOptions.DryRun) > 0 {
			return false, nil, nil
		}
		if calls.Add(1) > n {
			return false, nil, nil
		}
		time.Sleep(slow)
		if made {
			o := a.(k8stesting.CreateAction).GetObject()
			if err := fc.cs.Tracker().Create(a.GetResource(), o, a.GetNamespace()); err != nil {
				return true, nil, err
			}
		}
		return true, nil, err
	})
	return &calls
}

// clientArgs is a short client run: 100 ms measured, so a 300 ms deadline.
var clientArgs = []string{"run", "--test", engine.TCPStream, "--duration", "100ms", "--warmup", "0s", "--repeat", "1", "--format", "json", "--target", "10.244.1.10:12870"}

func TestFaults(t *testing.T) {
	shortClientBounds(t)
	secrets := schema.GroupResource{Resource: "secrets"}
	deadline := fmt.Errorf("Post \"https://api/api/v1/namespaces/cnibench/secrets\": %w", context.DeadlineExceeded)
	tests := []struct {
		name string
		// inject sets the fault up; the counter it returns, if any,
		// must show a retry.
		inject    func(fc *fakeCluster) *atomic.Int32
		run       func(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error
		wantUpErr []string // "" : Up succeeds
		wantRun   []string // nil: Run succeeds; else its error holds these
	}{
		{name: "429 with Retry-After, then success", inject: func(fc *fakeCluster) *atomic.Int32 {
			return failFirst(fc, "create", "pods", 1, apierrors.NewTooManyRequests("slow down", 1), 0, false)
		}},
		{name: "500 twice, then success", inject: func(fc *fakeCluster) *atomic.Int32 {
			failFirst(fc, "list", "endpointslices", 2, apierrors.NewInternalError(errors.New("etcdserver: leader changed")), 0, false)
			return failFirst(fc, "create", "services", 2, apierrors.NewInternalError(errors.New("etcdserver: leader changed")), 0, false)
		}},
		{name: "slow call beyond its deadline, made all the same", inject: func(fc *fakeCluster) *atomic.Int32 {
			return failFirst(fc, "create", "secrets", 1, deadline, 150*time.Millisecond, true)
		}},
		{name: "exec stream drops mid-run",
			run: func(_ context.Context, _ []string, _ io.Reader, stdout io.Writer) error {
				fmt.Fprint(stdout, `{"schema":`)
				return errors.New("stream error: stream ID 3; INTERNAL_ERROR; received from peer")
			},
			wantRun: []string{"client in pod cnibench/cnibench-", "-cli-a: the exec stream failed after", "INTERNAL_ERROR"}},
		{name: "exec stream never returns",
			run: func(ctx context.Context, _ []string, _ io.Reader, _ io.Writer) error {
				<-ctx.Done() // as the real stream does at its context's end
				return ctx.Err()
			},
			wantRun: []string{"-cli-a: no result within 300ms, its deadline"}},
		{name: "403 forbidden", inject: func(fc *fakeCluster) *atomic.Int32 {
			failFirst(fc, "create", "secrets", 1000, apierrors.NewForbidden(secrets, "x", errors.New(`User "bench" cannot create resource "secrets"`)), 0, false)
			return nil
		}, wantUpErr: []string{"create secret cnibench/cnibench-token-", "forbidden", `User "bench" cannot create resource "secrets"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(kube.WithRetryPolicy(context.Background(), faultPolicy), 20*time.Second)
			defer cancel()
			fc := newFakeCluster(t)
			var calls *atomic.Int32
			if tt.inject != nil {
				calls = tt.inject(fc)
			}
			b := NewWithClient(Options{Image: testImage, PullPolicy: corev1.PullNever, CNIConfDir: "/var/lib/{node}/cni/net.d",
				PodTimeout: 5 * time.Second, FootprintWindow: 50 * time.Millisecond}, fc.cs, faultExec{fc, tt.run})
			start := time.Now()
			dep, err := b.Up(ctx, backend.Spec{Token: testToken})
			t.Logf("Up took %v", time.Since(start))
			if dep == nil {
				t.Fatalf("Up returned no deployment (err %v)", err)
			}
			d := dep.(*Deployment)
			if len(tt.wantUpErr) > 0 {
				checkOneLine(t, "Up", err, tt.wantUpErr)
			} else {
				if err != nil {
					t.Fatalf("Up: %v", err)
				}
				if calls != nil && calls.Load() < 2 {
					t.Errorf("the faulty call was made %d times: not retried", calls.Load())
				}
				start = time.Now()
				stdout, _, err := d.Run(ctx, place{d.ns, d.name(podCliA)}, clientArgs)
				el := time.Since(start)
				if tt.wantRun == nil {
					var r result.Result
					if err != nil || json.Unmarshal(stdout, &r) != nil || r.Schema != result.SchemaResult {
						t.Errorf("Run: %v, output %q", err, stdout)
					}
				} else {
					checkOneLine(t, "Run", err, tt.wantRun)
					if el > 2*time.Second {
						t.Errorf("Run took %v, past its 300ms deadline", el)
					}
				}
			}
			if err := d.Down(ctx); err != nil {
				t.Errorf("Down: %v", err)
			}
			checkNothingLeft(t, fc, d)
		})
	}
}

// checkOneLine checks that err is one line holding every part of want.
func checkOneLine(t *testing.T, what string, err error, want []string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s succeeded, want an error holding %q", what, want)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("%s: error of several lines: %v", what, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: err = %v, want it to hold %q", what, err, w)
		}
	}
}

// checkNothingLeft checks that no pod, service, secret or network policy
// of the run is left, nor the namespace the run created.
func checkNothingLeft(t *testing.T, fc *fakeCluster, d *Deployment) {
	t.Helper()
	if left := fc.inventory(t, d.ns); len(left) > 0 {
		t.Errorf("left after Down: %v", left)
	}
	nss, err := fc.cs.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{LabelSelector: kube.RunSelector(d.runID)})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nss.Items {
		t.Errorf("namespace %s left after Down", n.Name)
	}
}

// Ctrl-C during a client run closes the client's stdin and brings back
// what it measured; a client that does not answer its stdin's end is cut
// after the grace.
func TestRunInterrupted(t *testing.T) {
	shortClientBounds(t)
	tests := []struct {
		name    string
		answers bool // the client answers its stdin's end
		wantErr string
	}{
		{"answers with its partial result", true, "command terminated with exit code 130"},
		{"ignores its stdin", false, "-cli-a: interrupted, and no result within 200ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := newFakeCluster(t)
			started := make(chan struct{})
			var sawEOF atomic.Bool
			run := func(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
				if stdin == nil || !strings.Contains(strings.Join(args, " "), stopOnStdinEOF) {
					return fmt.Errorf("client run without stdin or %s: %q", stopOnStdinEOF, args)
				}
				close(started)
				if !tt.answers {
					<-ctx.Done()
					return ctx.Err()
				}
				// The client measures until its stdin ends (the stream's
				// own context must outlive the run's).
				if _, err := io.Copy(io.Discard, stdin); err != nil {
					return err
				}
				if ctx.Err() != nil {
					return fmt.Errorf("the stream's context ended with the run's: %w", ctx.Err())
				}
				sawEOF.Store(true)
				r := fakeResult(args)
				r.Repeats, r.Interrupted = r.Repeats[:1], true
				r.Summarize()
				if err := json.NewEncoder(stdout).Encode(r); err != nil {
					return err
				}
				return utilexec.CodeExitError{Err: errors.New("command terminated with exit code 130"), Code: 130}
			}
			b := NewWithClient(Options{Image: testImage, PullPolicy: corev1.PullNever, CNIConfDir: "/var/lib/{node}/cni/net.d",
				PodTimeout: 5 * time.Second}, fc.cs, faultExec{fc, run})
			bctx, bcancel := context.WithTimeout(kube.WithRetryPolicy(context.Background(), faultPolicy), 20*time.Second)
			defer bcancel()
			d := up(t, bctx, b)
			ctx, cancel := context.WithCancel(bctx)
			go func() {
				<-started
				cancel() // Ctrl-C
			}()
			args := slicesWith(clientArgs, "--duration", "1h") // far from its deadline
			start := time.Now()
			stdout, _, err := d.Run(ctx, place{d.ns, d.name(podCliA)}, args)
			el := time.Since(start)
			checkOneLine(t, "Run", err, []string{tt.wantErr})
			if el > 2*time.Second {
				t.Errorf("Run took %v", el)
			}
			if !tt.answers {
				return
			}
			if !sawEOF.Load() {
				t.Error("the client's stdin did not end")
			}
			var r result.Result
			if jerr := json.Unmarshal(stdout, &r); jerr != nil || !r.Interrupted || len(r.Repeats) != 1 {
				t.Errorf("partial result: %v, %+v", jerr, r)
			}
			if code, ok := kube.ExitCode(err); !ok || code != 130 {
				t.Errorf("exit code %d, %v", code, ok)
			}
		})
	}
}

// slicesWith is args with flag's value set to v.
func slicesWith(args []string, flag, v string) []string {
	out := append([]string(nil), args...)
	for i := 0; i+1 < len(out); i++ {
		if out[i] == flag {
			out[i+1] = v
		}
	}
	return out
}

func TestClientDeadline(t *testing.T) {
	tests := []struct {
		args []string
		want time.Duration
	}{
		{nil, 5*11*time.Second + time.Minute}, // defaults: 5 × (1 s + 10 s), the 1 min floor
		{[]string{"--duration", "2s", "--warmup", "0s", "--repeat", "1"}, 2*time.Second + time.Minute},
		{[]string{"--duration=10m", "--warmup=0s", "--repeat=3"}, 30*time.Minute + 10*time.Minute}, // the 10 min cap
		{[]string{"--duration", "4m", "--warmup", "0s", "--repeat", "1"}, 4*time.Minute + 2*time.Minute},
		{[]string{"--duration", "bad", "--repeat", "-2"}, 5*11*time.Second + time.Minute}, // the client refuses them
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			if got := clientDeadline(tt.args); got != tt.want {
				t.Errorf("clientDeadline(%q) = %v, want %v", tt.args, got, tt.want)
			}
		})
	}
}
