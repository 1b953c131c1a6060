package kube

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// DefaultAPITimeout bounds Reachable: how long a run waits for an API
// server that does not answer before it gives up.
const DefaultAPITimeout = 30 * time.Second

// Reachable asks the API server at host for its version, again every
// second, until it answers or timeout has passed. An answer that refuses
// (401, 403) counts as reachable: what is refused is said by the call that
// needs it. On timeout the error is one line naming the server, where the
// kubeconfig came from (source) and the last failure.
func Reachable(ctx context.Context, cs kubernetes.Interface, host, source string, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = DefaultAPITimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		// ServerVersion takes no context: it is bounded here instead (the
		// goroutine ends with the client's own timeout, or the process).
		done := make(chan error, 1)
		go func() {
			_, err := cs.Discovery().ServerVersion()
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err) {
				return true, nil
			}
			last = err
			return false, nil
		case <-ctx.Done():
			if last == nil {
				last = errors.New("no answer")
			}
			return false, nil
		}
	})
	if err == nil {
		return nil
	}
	if parent := context.Cause(ctx); errors.Is(parent, context.Canceled) {
		return parent
	}
	return fmt.Errorf("the API server %s (kubeconfig %s) did not answer within %v: %v; start the cluster, point --kubeconfig/--context at a running one, or wait longer with --api-timeout",
		host, source, timeout, oneLine(last.Error()))
}
