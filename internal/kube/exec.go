package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/exec"
)

// Execer runs commands in the containers of pods, like kubectl exec.
type Execer interface {
	// Exec runs cmd in container of pod namespace/pod (container "" is
	// the pod's only container), feeding it stdin (nil: none) and copying
	// its output to stdout and stderr (nil: not requested; if both are
	// nil the output is discarded). It returns when the command ends or
	// ctx is done. A command that exits non-zero returns an error that
	// ExitCode recognises.
	Exec(ctx context.Context, namespace, pod, container string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) error
}

// NewExecer returns an Execer for the cluster of cfg, whose clientset is
// cs. Like kubectl, it speaks the WebSocket exec protocol and falls back to
// SPDY where the API server (or a proxy) cannot upgrade to WebSockets.
func NewExecer(cfg *rest.Config, cs kubernetes.Interface) Execer {
	return &execer{cfg: cfg, cs: cs}
}

type execer struct {
	cfg *rest.Config
	cs  kubernetes.Interface
}

// restClient returns the core/v1 REST client that builds exec URLs: cs's,
// or one made from cfg when cs has none (the fake clientset's is nil).
func (e *execer) restClient() (rest.Interface, error) {
	if e.cs != nil {
		if rc := e.cs.CoreV1().RESTClient(); rc != nil {
			if c, ok := rc.(*rest.RESTClient); !ok || c != nil {
				return rc, nil
			}
		}
	}
	c, err := corev1client.NewForConfig(e.cfg)
	if err != nil {
		return nil, err
	}
	return c.RESTClient(), nil
}

// Exec implements Execer.
func (e *execer) Exec(ctx context.Context, namespace, pod, container string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) error {
	what := fmt.Sprintf("exec %q in pod %s/%s", strings.Join(cmd, " "), namespace, pod)
	if len(cmd) == 0 {
		return fmt.Errorf("exec in pod %s/%s: empty command", namespace, pod)
	}
	if stdout == nil && stderr == nil {
		stdout = io.Discard
	}
	rc, err := e.restClient()
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	req := rc.Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: container,
			Command:   cmd,
			Stdin:     stdin != nil,
			Stdout:    stdout != nil,
			Stderr:    stderr != nil,
		}, scheme.ParameterCodec)
	ex, err := newExecutor(e.cfg, req.URL())
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	Logger(ctx).Debug("exec", "namespace", namespace, "pod", pod, "container", container, "cmd", cmd)
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr})
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// newExecutor is kubectl's: WebSocket first (it must be a GET, RFC 6455
// §4.1), SPDY (a POST) when the upgrade fails.
func newExecutor(cfg *rest.Config, u *url.URL) (remotecommand.Executor, error) {
	ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
	if err != nil {
		return nil, fmt.Errorf("websocket executor: %w", err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(cfg, "POST", u)
	if err != nil {
		return nil, fmt.Errorf("spdy executor: %w", err)
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

// ExitCode returns the exit code of the remote command that made err (as
// returned by Execer.Exec), and whether err is such an exit at all (false
// for transport or API errors).
func ExitCode(err error) (int, bool) {
	var ee exec.ExitError
	if errors.As(err, &ee) && ee.Exited() {
		return ee.ExitStatus(), true
	}
	return 0, false
}
