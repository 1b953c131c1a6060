package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
)

// CallTimeout is the default bound of one attempt of an API call.
const CallTimeout = 30 * time.Second

// RetryPolicy says how the package bounds and retries its API calls. Every
// call is made at most Attempts times, each attempt bounded by
// CallTimeout; an attempt that fails with a retryable error (Retryable),
// or that runs out of its CallTimeout while the caller's context is still
// alive, is retried after a delay: Backoff, doubled after each attempt,
// with up to 50 % jitter, at least the server's Retry-After, at most
// MaxDelay. The caller's context's end stops the retries.
type RetryPolicy struct {
	// CallTimeout bounds each attempt.
	CallTimeout time.Duration
	// Attempts is the most attempts of one call (at least 1).
	Attempts int
	// Backoff is the first delay between attempts.
	Backoff time.Duration
	// MaxDelay caps every delay, a server's Retry-After included.
	MaxDelay time.Duration
}

// defaultRetry is DefaultRetryPolicy's (tests shorten it).
var defaultRetry = RetryPolicy{CallTimeout: CallTimeout, Attempts: 6, Backoff: 500 * time.Millisecond, MaxDelay: 30 * time.Second}

// DefaultRetryPolicy is the policy of a context without WithRetryPolicy:
// 30 s per attempt, 6 attempts, 0.5 s backoff, delays of at most 30 s
// (about 3 min in the worst case).
func DefaultRetryPolicy() RetryPolicy { return defaultRetry }

type retryKey struct{}

// WithRetryPolicy returns a context whose API calls through this package
// follow p (zero fields: DefaultRetryPolicy's).
func WithRetryPolicy(ctx context.Context, p RetryPolicy) context.Context {
	return context.WithValue(ctx, retryKey{}, p)
}

// retryPolicy returns ctx's policy, its zero fields filled in.
func retryPolicy(ctx context.Context) RetryPolicy {
	d := DefaultRetryPolicy()
	p, ok := ctx.Value(retryKey{}).(RetryPolicy)
	if !ok {
		return d
	}
	if p.CallTimeout <= 0 {
		p.CallTimeout = d.CallTimeout
	}
	if p.Attempts < 1 {
		p.Attempts = d.Attempts
	}
	if p.Backoff <= 0 {
		p.Backoff = d.Backoff
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = d.MaxDelay
	}
	return p
}

// transientMessages are error texts of passing trouble that reach clients
// without a typed error (etcd's, through the API server; HTTP/2's).
var transientMessages = []string{
	"etcdserver: leader changed",
	"etcdserver: request timed out",
	"etcdserver: too many requests",
	"http2: client connection lost",
	"http2: server sent goaway",
	"connection refused",
	"connection reset by peer",
}

// permanentMessages are error texts of refusals that reach clients as
// server errors (etcd's, through the API server's 500) but fail the same
// way every time: the request itself is at fault.
var permanentMessages = []string{
	"etcdserver: request is too large",
}

// Retryable tells whether err is passing trouble, worth the same call
// again: the API server's 429 TooManyRequests, timeouts (504, server
// timeout), 500 internal errors (e.g. "etcdserver: leader changed"), 503
// and other 5xx responses, network timeouts, connections refused, reset or
// cut short (io.ErrUnexpectedEOF). Refusals (Forbidden, Invalid,
// AlreadyExists, NotFound, Conflict…, and etcd's "request is too large",
// which the API server returns as a 500), and the end of the caller's
// context (cancelled, or its deadline) are not.
func Retryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	msg := strings.ToLower(err.Error())
	for _, m := range permanentMessages {
		if strings.Contains(msg, m) {
			return false
		}
	}
	switch {
	case apierrors.IsTooManyRequests(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err),
		apierrors.IsInternalError(err), apierrors.IsServiceUnavailable(err), apierrors.IsUnexpectedServerError(err):
		return true
	case apierrors.IsForbidden(err), apierrors.IsInvalid(err), apierrors.IsAlreadyExists(err), apierrors.IsNotFound(err),
		apierrors.IsConflict(err), apierrors.IsBadRequest(err), apierrors.IsUnauthorized(err), apierrors.IsGone(err),
		apierrors.IsMethodNotSupported(err), apierrors.IsRequestEntityTooLargeError(err):
		return false
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		code := st.Status().Code
		return code >= 500 && code != 501 // 501: not implemented, for good
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsHTTP2ConnectionLost(err) {
		return true
	}
	for _, m := range transientMessages {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

// Call runs fn, an API call named what ("create pod ns/name"), under ctx's
// RetryPolicy: each attempt with its own deadline, retryable errors
// retried with backoff. Its error names what, and, if it retried, the
// attempts and the last error; it wraps the last error (or ctx's, if ctx
// ended), so apierrors' predicates see through it.
func Call(ctx context.Context, what string, fn func(ctx context.Context) error) error {
	return retry(ctx, what, func(ctx context.Context, _ int) error { return fn(ctx) })
}

// retry is call, telling fn which attempt (from 1) it makes.
func retry(ctx context.Context, what string, fn func(ctx context.Context, attempt int) error) error {
	p := retryPolicy(ctx)
	b := wait.Backoff{Duration: p.Backoff, Factor: 2, Jitter: 0.5, Steps: p.Attempts, Cap: p.MaxDelay}
	for attempt := 1; ; attempt++ {
		timedOut, err := attemptOnce(ctx, p, attempt, fn)
		if err == nil {
			return nil
		}
		switch {
		case ctx.Err() != nil && attempt == 1:
			return fmt.Errorf("%s: %w", what, err)
		case ctx.Err() != nil:
			return fmt.Errorf("%s: %w (after %d attempts, the last: %v)", what, ctx.Err(), attempt, err)
		case !timedOut && !Retryable(err) && attempt == 1:
			return fmt.Errorf("%s: %w", what, err)
		case !timedOut && !Retryable(err):
			return fmt.Errorf("%s: attempt %d: %w", what, attempt, err)
		case attempt >= p.Attempts:
			return fmt.Errorf("%s: gave up after %d attempts, the last: %w", what, attempt, err)
		}
		delay := b.Step()
		if s, ok := apierrors.SuggestsClientDelay(err); ok {
			delay = max(delay, time.Duration(s)*time.Second)
		}
		delay = min(delay, p.MaxDelay)
		Logger(ctx).Debug("API call failed, retrying", "call", what, "attempt", attempt, "of", p.Attempts, "in", delay, "err", err)
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s: %w (after %d attempts, the last: %v)", what, ctx.Err(), attempt, err)
		}
	}
}

// attemptOnce runs one attempt of fn bounded by p.CallTimeout; timedOut
// says that the attempt ran out of its own time (ctx still alive).
func attemptOnce(ctx context.Context, p RetryPolicy, attempt int, fn func(ctx context.Context, attempt int) error) (timedOut bool, err error) {
	actx, cancel := context.WithTimeout(ctx, p.CallTimeout)
	defer cancel()
	err = fn(actx, attempt)
	if err != nil && ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
		return true, fmt.Errorf("no answer within %v: %w", p.CallTimeout, err)
	}
	return false, err
}

// Once makes one attempt of fn, a wait loop's look at the cluster, within
// the policy's CallTimeout. transient says the error is passing trouble
// (retryable, or the attempt timed out): it is logged, and the loop should
// take it as "not yet" and look again. An error met after ctx (the loop's
// own, with its deadline) ended is transient too: the loop's end is then
// the loop's to report, as a timeout, not as the last look's error that
// happened to straddle the deadline.
func Once(ctx context.Context, what string, fn func(ctx context.Context) error) (transient bool, err error) {
	timedOut, err := attemptOnce(ctx, retryPolicy(ctx), 1, func(ctx context.Context, _ int) error { return fn(ctx) })
	if err == nil {
		return false, nil
	}
	err = fmt.Errorf("%s: %w", what, err)
	if ctx.Err() != nil || timedOut || Retryable(err) {
		Logger(ctx).Debug("API call failed, looking again", "call", what, "err", err)
		return true, err
	}
	return false, err
}

// CreateOwn creates an object with create, retried as Call retries. A
// create retried after a timeout or a dropped connection may have
// succeeded on the server the first time: the retry then meets
// AlreadyExists for the call's own object. When want (the object sent)
// carries a run's labels (ManagedByKey and RunKey), an existing object of
// that name with the same two labels met by a retry is taken as created by
// this call, and returned (get reads it). Otherwise, and on a first
// attempt, AlreadyExists is an error as the server gave it.
func CreateOwn[T metav1.Object](ctx context.Context, what string, want metav1.Object, create, get func(context.Context) (T, error)) (T, error) {
	var got T
	err := retry(ctx, what, func(ctx context.Context, attempt int) error {
		o, err := create(ctx)
		if err == nil {
			got = o
			return nil
		}
		if attempt == 1 || !apierrors.IsAlreadyExists(err) || want.GetLabels()[RunKey] == "" {
			return err
		}
		cur, gerr := get(ctx)
		if gerr != nil || !sameRun(want, cur) {
			return err
		}
		Logger(ctx).Debug("created by an earlier attempt", "call", what)
		got = cur
		return nil
	})
	return got, err
}

// sameRun tells whether cur carries want's ManagedByKey and RunKey labels.
func sameRun(want, cur metav1.Object) bool {
	w, c := want.GetLabels(), cur.GetLabels()
	return c[ManagedByKey] == w[ManagedByKey] && c[RunKey] == w[RunKey]
}
