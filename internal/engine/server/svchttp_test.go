package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestServeHTTPBody: every GET gets the body; connections beyond
// --max-flows are closed at once, and a closed connection gives its flow
// back; the server stops when its context ends.
func TestServeHTTPBody(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv := NewServer(nil)
	srv.Limits = Limits{MaxFlows: 2, HelloTimeout: time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.ServeHTTPBody(ctx, ln, 1500) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("ServeHTTPBody: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("ServeHTTPBody did not stop within 5s")
		}
	}()
	url := "http://" + ln.Addr().String() + "/"
	get := func() (int, error) {
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 2 * time.Second}
		resp, err := c.Get(url)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return len(b), err
	}
	if n, err := get(); err != nil || n != 1500 {
		t.Fatalf("GET: %d bytes, %v; want 1500", n, err)
	}
	// Two idle connections take both flows; a third is refused.
	var idle []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	waitFlows := func(want int) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Second)
		for srv.budget.inUse().flows != want {
			if time.Now().After(deadline) {
				t.Fatalf("flows in use %d, want %d", srv.budget.inUse().flows, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFlows(2)
	if _, err := get(); err == nil {
		t.Fatal("a third connection over --max-flows 2 was served")
	}
	for _, c := range idle {
		c.Close()
	}
	waitFlows(0)
	if n, err := get(); err != nil || n != 1500 {
		t.Fatalf("GET after the idle connections closed: %d bytes, %v", n, err)
	}
}
