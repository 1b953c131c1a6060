package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

var podsGR = schema.GroupResource{Resource: "pods"}

func TestRetryable(t *testing.T) {
	timeout := &net.OpError{Op: "dial", Err: &timeoutErr{}}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"429", apierrors.NewTooManyRequests("slow down", 1), true},
		{"server timeout", apierrors.NewServerTimeout(podsGR, "create", 1), true},
		{"504 timeout", apierrors.NewTimeoutError("gateway", 1), true},
		{"500 leader changed", apierrors.NewInternalError(errors.New("etcdserver: leader changed")), true},
		{"503", apierrors.NewServiceUnavailable("down"), true},
		{"unexpected server error", apierrors.NewGenericServerResponse(502, "get", podsGR, "p", "bad gateway", 0, true), true},
		{"leader changed as text", errors.New("rpc error: etcdserver: leader changed"), true},
		{"net timeout", &url.Error{Op: "Post", URL: "https://api", Err: timeout}, true},
		{"unexpected EOF", fmt.Errorf("read body: %w", io.ErrUnexpectedEOF), true},
		{"refused", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, true},
		{"reset", &net.OpError{Op: "read", Err: syscall.ECONNRESET}, true},
		{"forbidden", apierrors.NewForbidden(podsGR, "p", errors.New("no RBAC")), false},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "p", nil), false},
		{"already exists", apierrors.NewAlreadyExists(podsGR, "p"), false},
		{"not found", apierrors.NewNotFound(podsGR, "p"), false},
		{"conflict", apierrors.NewConflict(podsGR, "p", errors.New("changed")), false},
		{"canceled", fmt.Errorf("post: %w", context.Canceled), false},
		{"deadline", &url.Error{Op: "Post", URL: "https://api", Err: context.DeadlineExceeded}, false},
		{"plain", errors.New("image not found"), false},
		{"500 request too large", apierrors.NewInternalError(errors.New("etcdserver: request is too large")), false},
		{"413", apierrors.NewRequestEntityTooLargeError("limit is 3145728"), false},
		{"429 etcd too many requests", apierrors.NewInternalError(errors.New("etcdserver: too many requests")), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Retryable(tt.err); got != tt.want {
				t.Errorf("Retryable(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

type timeoutErr struct{}

func (*timeoutErr) Error() string   { return "i/o timeout" }
func (*timeoutErr) Timeout() bool   { return true }
func (*timeoutErr) Temporary() bool { return true }

// fast is a policy for the tests: 3 attempts of 50 ms, 1 ms backoff.
var fast = RetryPolicy{CallTimeout: 50 * time.Millisecond, Attempts: 3, Backoff: time.Millisecond, MaxDelay: 10 * time.Millisecond}

func TestCall(t *testing.T) {
	forbidden := apierrors.NewForbidden(podsGR, "p", errors.New("no RBAC"))
	tests := []struct {
		name    string
		errs    []error // the attempts' errors in turn; past the end: success
		slow    int     // the first slow attempts (beyond CallTimeout)
		wantN   int
		wantErr string // "" : success
	}{
		{"first time", nil, 0, 1, ""},
		{"500 twice", []error{apierrors.NewInternalError(errors.New("boom")), apierrors.NewInternalError(errors.New("boom"))}, 0, 3, ""},
		{"slow once", nil, 1, 2, ""},
		{"forbidden", []error{forbidden}, 0, 1, `create pod ns/p: pods "p" is forbidden: no RBAC`},
		{"forbidden after a retry", []error{apierrors.NewServiceUnavailable("down"), forbidden}, 0, 2, `create pod ns/p: attempt 2: pods "p" is forbidden`},
		{"exhausted", []error{apierrors.NewServiceUnavailable("a"), apierrors.NewServiceUnavailable("b"), apierrors.NewServiceUnavailable("c")}, 0, 3,
			"create pod ns/p: gave up after 3 attempts, the last: c"},
		{"slow for good", nil, 3, 3, "create pod ns/p: gave up after 3 attempts, the last: no answer within 50ms: context deadline exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := WithRetryPolicy(context.Background(), fast)
			n := 0
			err := Call(ctx, "create pod ns/p", func(ctx context.Context) error {
				n++
				if n <= tt.slow {
					<-ctx.Done() // as a real client: its request ends with ctx
					return ctx.Err()
				}
				if n <= len(tt.errs) {
					return tt.errs[n-1]
				}
				return nil
			})
			if n != tt.wantN {
				t.Errorf("%d attempts, want %d", n, tt.wantN)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("err = %v", err)
			case tt.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "\n")):
				t.Errorf("err = %v, want one line starting %q", err, tt.wantErr)
			}
		})
	}
}

// The server's Retry-After is honoured (up to MaxDelay).
func TestCallRetryAfter(t *testing.T) {
	p := fast
	p.MaxDelay = 5 * time.Second
	ctx := WithRetryPolicy(context.Background(), p)
	n := 0
	start := time.Now()
	err := Call(ctx, "list pods", func(context.Context) error {
		if n++; n == 1 {
			return apierrors.NewTooManyRequests("slow down", 1)
		}
		return nil
	})
	if err != nil || n != 2 {
		t.Fatalf("err %v after %d attempts", err, n)
	}
	if el := time.Since(start); el < time.Second {
		t.Errorf("retried after %v, before the server's Retry-After of 1s", el)
	}
}

// The caller's context ends the retries at once, and its error is wrapped.
func TestCallStopsWithContext(t *testing.T) {
	p := fast
	p.Backoff, p.MaxDelay, p.Attempts = time.Minute, time.Minute, 10
	ctx, cancel := context.WithTimeout(WithRetryPolicy(context.Background(), p), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := Call(ctx, "get pod ns/p", func(context.Context) error { return apierrors.NewServiceUnavailable("down") })
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "get pod ns/p") || !strings.Contains(err.Error(), "the last: down") {
		t.Errorf("err = %v", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("took %v", el)
	}
}

// once, a wait loop's look: passing trouble is "not yet", a refusal is
// final, and whatever a look meets once the loop's own context ended is
// "not yet" too, so the loop reports its timeout, not the look that
// straddled its deadline.
func TestOnce(t *testing.T) {
	forbidden := apierrors.NewForbidden(podsGR, "p", errors.New("no"))
	tests := []struct {
		name          string
		err           error
		endDuring     bool // the loop's context ends while the look runs
		wantTransient bool
		wantErr       bool
	}{
		{name: "answer", err: nil},
		{name: "500", err: apierrors.NewInternalError(errors.New("boom")), wantTransient: true, wantErr: true},
		{name: "forbidden", err: forbidden, wantErr: true},
		{name: "500 past the deadline", err: apierrors.NewInternalError(errors.New("boom")), endDuring: true, wantTransient: true, wantErr: true},
		{name: "forbidden past the deadline", err: forbidden, endDuring: true, wantTransient: true, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(WithRetryPolicy(context.Background(), fast))
			defer cancel()
			transient, err := Once(ctx, "get pod ns/p", func(context.Context) error {
				if tt.endDuring {
					cancel()
				}
				return tt.err
			})
			if transient != tt.wantTransient || (err != nil) != tt.wantErr {
				t.Fatalf("once = %v, %v; want transient %v, an error %v", transient, err, tt.wantTransient, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "get pod ns/p") {
				t.Errorf("error %q does not name the call", err)
			}
		})
	}
}

// A create retried after a timeout takes the object its first attempt
// made when it carries the run's labels, not someone else's.
func TestCreateOwn(t *testing.T) {
	tests := []struct {
		name      string
		existing  map[string]string // labels of the object the first attempt left (nil: none left)
		firstErr  error
		wantErr   string
		wantCalls int
	}{
		{"own object after a timeout", runLabels("r1"), apierrors.NewTimeoutError("slow", 0), "", 2},
		{"other run's object", runLabels("r2"), apierrors.NewTimeoutError("slow", 0), `create secret ns/s: attempt 2: secrets "s" already exists`, 2},
		{"exists at the first attempt", runLabels("r1"), nil, `create secret ns/s: secrets "s" already exists`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset()
			var calls atomic.Int32
			cs.PrependReactor("create", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if calls.Add(1) == 1 && tt.firstErr != nil {
					// The server made it, the answer was lost.
					s := a.(k8stesting.CreateAction).GetObject().(*corev1.Secret).DeepCopy()
					s.Labels = tt.existing
					if err := cs.Tracker().Create(corev1.SchemeGroupVersion.WithResource("secrets"), s, "ns"); err != nil {
						return true, nil, err
					}
					return true, nil, tt.firstErr
				}
				return false, nil, nil
			})
			if tt.firstErr == nil {
				_, _ = cs.CoreV1().Secrets("ns").Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", Labels: tt.existing}}, metav1.CreateOptions{})
				calls.Store(0)
			}
			want := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", Labels: runLabels("r1")}}
			secrets := cs.CoreV1().Secrets("ns")
			// defaultRetry (5 s a call), not fast: the timeout here is an
			// injected error, and a fake create slower than fast's 50 ms on
			// a loaded machine would be a second one (make test saw 2 creates).
			got, err := CreateOwn(WithRetryPolicy(context.Background(), defaultRetry), "create secret ns/s", want,
				func(ctx context.Context) (*corev1.Secret, error) {
					return secrets.Create(ctx, want, metav1.CreateOptions{})
				},
				func(ctx context.Context) (*corev1.Secret, error) { return secrets.Get(ctx, "s", metav1.GetOptions{}) })
			if int(calls.Load()) != tt.wantCalls {
				t.Errorf("%d creates, want %d", calls.Load(), tt.wantCalls)
			}
			if tt.wantErr == "" {
				if err != nil || got == nil || got.Name != "s" {
					t.Errorf("got %v, %v", got, err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) || !apierrors.IsAlreadyExists(err) {
				t.Errorf("err = %v, want %q (AlreadyExists)", err, tt.wantErr)
			}
		})
	}
}

// StartPod's wait looks past passing errors of its Gets, not past a
// refusal.
func TestStartPodToleratesPassingErrors(t *testing.T) {
	tests := []struct {
		name    string
		getErr  error
		failFor int32
		wantErr string
	}{
		{"500 twice", apierrors.NewInternalError(errors.New("etcdserver: leader changed")), 2, ""},
		{"403", apierrors.NewForbidden(podsGR, "p", errors.New("no get")), 1, `get pod ns/p: pods "p" is forbidden: no get`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset()
			cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
				p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.9",
					ContainerStatuses: []corev1.ContainerStatus{{Name: ContainerName, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
				return false, nil, nil
			})
			var gets atomic.Int32
			cs.PrependReactor("get", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				if gets.Add(1) <= tt.failFor {
					return true, nil, tt.getErr
				}
				return false, nil, nil
			})
			pod := BuildPod("ns", "r1", PodSpec{Name: "p", Node: "n1", Image: "img"})
			got, err := StartPod(WithRetryPolicy(context.Background(), defaultRetry), cs, pod, 5*time.Second)
			if tt.wantErr == "" {
				if err != nil || got.Status.PodIP != "10.0.0.9" {
					t.Errorf("got %v, %v", got, err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}
