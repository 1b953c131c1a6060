package export

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestPushURL(t *testing.T) {
	for _, tc := range []struct{ base, job, instance, want, err string }{
		{"http://pg:9091", "cnibench", "lab-host", "http://pg:9091/metrics/job/cnibench/instance/lab-host", ""},
		{"http://pg:9091/", "cnibench", "", "http://pg:9091/metrics/job/cnibench", ""},
		{"https://proxy/pushgateway/", "ci", "a/b", "https://proxy/pushgateway/metrics/job/ci/instance@base64/YS9i", ""},
		{"http://pg:9091", "my job", "h", "http://pg:9091/metrics/job/my%20job/instance/h", ""},
		{"http://pg:9091", "j/k", "h", "http://pg:9091/metrics/job@base64/ai9r/instance/h", ""},
		{"pg:9091", "j", "h", "", "want http:// or https://"},
		{"http://", "j", "h", "", "no host"},
		{"http://pg:9091?x=1", "j", "h", "", "no query"},
		{"http://pg:9091", "", "h", "", "job name is empty"},
	} {
		got, err := PushURL(tc.base, tc.job, tc.instance)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("PushURL(%q, %q, %q) = %q, %v: want an error with %q", tc.base, tc.job, tc.instance, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("PushURL(%q, %q, %q) = %q, %v: want %q", tc.base, tc.job, tc.instance, got, err, tc.want)
		}
	}
}

func TestPush(t *testing.T) {
	in := readFixture(t)
	var gotMethod, gotPath, gotType, gotBody string
	status, answer := http.StatusOK, ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		gotMethod, gotPath, gotType, gotBody = r.Method, r.URL.EscapedPath(), r.Header.Get("Content-Type"), string(b)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, answer)
	}))
	defer srv.Close()
	if err := Push(context.Background(), PushOptions{URL: srv.URL, Job: "cnibench", Instance: "lab-host"}, in); err != nil {
		t.Fatal(err)
	}
	if gotMethod != http.MethodPut || gotPath != "/metrics/job/cnibench/instance/lab-host" || gotType != TextContentType {
		t.Errorf("request %s %s (%s): want PUT /metrics/job/cnibench/instance/lab-host (%s)", gotMethod, gotPath, gotType, TextContentType)
	}
	if !strings.Contains(gotBody, "# TYPE cnibench_trans_per_sec gauge\n") || strings.Contains(gotBody, "# EOF") {
		t.Errorf("body is not the Prometheus text format:\n%s", gotBody)
	}
	status, answer = http.StatusBadRequest, "pushed metrics are invalid or inconsistent with existing metrics: boom\nsecond line"
	err := Push(context.Background(), PushOptions{URL: srv.URL, Job: "cnibench"}, in)
	if err == nil || !strings.Contains(err.Error(), "400 Bad Request: pushed metrics are invalid or inconsistent with existing metrics: boom") || strings.Contains(err.Error(), "second line") {
		t.Errorf("err = %v: want the status and the body's first line", err)
	}
}

func TestPushTimeout(t *testing.T) {
	in := readFixture(t)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	start := time.Now()
	err := Push(context.Background(), PushOptions{URL: srv.URL, Job: "j", Timeout: 200 * time.Millisecond}, in)
	if err == nil || !strings.Contains(err.Error(), "no answer within 200ms") {
		t.Errorf("err = %v: want no answer within 200ms", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s", d)
	}
}
