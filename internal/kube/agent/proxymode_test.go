package agent

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestReadProxyMode(t *testing.T) {
	for _, c := range []struct {
		name, body string
		status     int
		mode, err  string
	}{
		{"iptables", "iptables", 200, "iptables", ""},
		{"nftables with newline", "nftables\n", 200, "nftables", ""},
		{"not found", "404 page not found", 404, "", "404"},
		{"html", "<html>hi</html>", 200, "", "not a proxy mode"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(c.status)
				_, _ = w.Write([]byte(c.body))
			}))
			defer srv.Close()
			got := ReadProxyMode(context.Background(), srv.URL+"/proxyMode", time.Second)
			if got.Mode != c.mode || (c.err == "") != (got.Error == "") || !strings.Contains(got.Error, c.err) {
				t.Errorf("got %+v, want mode %q error containing %q", got, c.mode, c.err)
			}
		})
	}
	// Nothing listening: an error, quickly.
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	if got := ReadProxyMode(context.Background(), url, time.Second); got.Error == "" || got.Schema != SchemaProxyMode {
		t.Errorf("closed port: %+v", got)
	}
}
