package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream/wsstream"
	"k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/exec"
)

// execServer is an API server that answers exec requests over the
// WebSocket protocol v5: it prints the command on stdout, "oops" on
// stderr, and exits with code exit.
func execServer(t *testing.T, exit int) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/namespaces/ns/pods/p/exec" {
			http.Error(w, "unexpected path "+r.URL.Path, http.StatusNotFound)
			return
		}
		q := r.URL.Query()
		if q.Get("container") != "c" || q.Get("stdout") != "true" || q.Get("stderr") != "true" || q.Get("stdin") != "" {
			http.Error(w, "unexpected query "+r.URL.RawQuery, http.StatusBadRequest)
			return
		}
		conn := wsstream.NewConn(map[string]wsstream.ChannelProtocolConfig{
			remotecommand.StreamProtocolV5Name: {Binary: true, Channels: []wsstream.ChannelType{
				wsstream.IgnoreChannel, wsstream.WriteChannel, wsstream.WriteChannel, wsstream.WriteChannel, wsstream.ReadChannel,
			}},
		})
		_, streams, err := conn.Open(w, r)
		if err != nil {
			t.Errorf("open websocket: %v", err)
			return
		}
		defer conn.Close()
		fmt.Fprint(streams[remotecommand.StreamStdOut], strings.Join(q["command"], " "))
		fmt.Fprint(streams[remotecommand.StreamStdErr], "oops")
		st := metav1.Status{Status: metav1.StatusSuccess}
		if exit != 0 {
			st = metav1.Status{Status: metav1.StatusFailure, Reason: remotecommand.NonZeroExitCodeReason,
				Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: remotecommand.ExitCodeCauseType, Message: fmt.Sprint(exit)}}}}
		}
		b, _ := json.Marshal(st)
		streams[remotecommand.StreamErr].Write(b) //nolint:errcheck
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestExec(t *testing.T) {
	for _, tt := range []struct {
		exit int
	}{{0}, {3}} {
		t.Run(fmt.Sprint("exit ", tt.exit), func(t *testing.T) {
			srv := execServer(t, tt.exit)
			e := NewExecer(&rest.Config{Host: srv.URL}, fake.NewClientset())
			var out, errOut bytes.Buffer
			err := e.Exec(context.Background(), "ns", "p", "c", []string{"/cnibench", "run", "--json"}, nil, &out, &errOut)
			if out.String() != "/cnibench run --json" || errOut.String() != "oops" {
				t.Errorf("stdout %q, stderr %q", out.String(), errOut.String())
			}
			code, ok := ExitCode(err)
			if tt.exit == 0 {
				if err != nil || ok {
					t.Fatalf("err = %v, ExitCode = %d, %v", err, code, ok)
				}
				return
			}
			if !ok || code != tt.exit {
				t.Fatalf("ExitCode(%v) = %d, %v; want %d", err, code, ok, tt.exit)
			}
			for _, want := range []string{"ns/p", "exit code 3"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}

func TestExecErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "pods \"p\" is forbidden", http.StatusForbidden)
	}))
	defer srv.Close()
	e := NewExecer(&rest.Config{Host: srv.URL}, fake.NewClientset())
	err := e.Exec(context.Background(), "ns", "p", "", []string{"true"}, nil, nil, nil)
	if err == nil {
		t.Fatal("no error")
	}
	t.Log(err)
	if _, ok := ExitCode(err); ok {
		t.Errorf("ExitCode(%v) is an exit", err)
	}
	if err := e.Exec(context.Background(), "ns", "p", "", nil, nil, nil, nil); err == nil {
		t.Error("empty command: no error")
	}
}

func TestExitCode(t *testing.T) {
	for _, tt := range []struct {
		err  error
		code int
		ok   bool
	}{
		{nil, 0, false},
		{errors.New("x"), 0, false},
		{exec.CodeExitError{Err: errors.New("command terminated with exit code 2"), Code: 2}, 2, true},
		{fmt.Errorf("exec: %w", exec.CodeExitError{Err: errors.New("x"), Code: 7}), 7, true},
	} {
		code, ok := ExitCode(tt.err)
		if code != tt.code || ok != tt.ok {
			t.Errorf("ExitCode(%v) = %d, %v; want %d, %v", tt.err, code, ok, tt.code, tt.ok)
		}
	}
}
