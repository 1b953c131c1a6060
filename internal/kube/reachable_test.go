package kube

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

func TestReachable(t *testing.T) {
	hang := make(chan struct{})
	servers := map[string]http.HandlerFunc{
		"answers": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"major":"1","minor":"33","gitVersion":"v1.33.13"}`)) //nolint:errcheck
		},
		"refuses the caller": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}`)) //nolint:errcheck
		},
		"hangs": func(http.ResponseWriter, *http.Request) { <-hang },
	}
	// A port nobody listens on: connection refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	for _, tc := range []struct {
		name, host string
		want       string // "" reachable
	}{
		{"answers", "", ""},
		{"refuses the caller", "", ""},
		{"hangs", "", "did not answer within 1.5s: no answer"},
		{"closed port", closed, "connect: connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := tc.host
			if h, ok := servers[tc.name]; ok {
				srv := httptest.NewServer(h)
				defer srv.Close()
				if tc.name == "hangs" {
					defer close(hang) // before Close, which waits for the handler
				}
				host = srv.URL
			}
			cs, err := NewClient(&rest.Config{Host: host})
			if err != nil {
				t.Fatal(err)
			}
			t0 := time.Now()
			err = Reachable(context.Background(), cs, host, "/x/kubeconfig", 1500*time.Millisecond)
			took := time.Since(t0)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unreachable: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "the API server "+host+" (kubeconfig /x/kubeconfig)") ||
				strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %v, want one line naming the server, the kubeconfig and %q", err, tc.want)
			}
			if took > 5*time.Second { // bounded: the timeout, not the client's own
				t.Errorf("gave up after %v, want about 1.5s", took)
			}
		})
	}
	t.Run("interrupted", func(t *testing.T) {
		cs, _ := NewClient(&rest.Config{Host: closed})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := Reachable(ctx, cs, closed, "k", time.Minute); err != context.Canceled {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	})
}
