// Command httpserver is a standalone HTTP server for `make bench`: it serves
// every GET with a fixed-size body through server.BodyHandler, the same
// handler `cnibench serve` uses for its per-test HTTP data plane, so that
// peers such as hey can be pointed at a fixed address.
//
//	go run ./bench/httpserver --listen 127.0.0.1:22880 --body 1024
package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/server"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:22880", "address to listen on, HOST:PORT")
	body := flag.Int("body", 1024, "response body bytes")
	flag.Parse()
	if err := run(*listen, *body); err != nil {
		fmt.Fprintln(os.Stderr, "httpserver:", err)
		os.Exit(1)
	}
}

func run(listen string, body int) error {
	if body < 0 || body > engine.MaxHTTPBody {
		return fmt.Errorf("--body %d: must be between 0 and %d", body, engine.MaxHTTPBody)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	// Same server settings as the engine's HTTP data plane (httpserver.go).
	srv := &http.Server{
		Handler:           server.BodyHandler(body, nil),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       30 * time.Second,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(os.Stderr, "httpserver: listening on %s, body %d bytes\n", ln.Addr(), body)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case s := <-sig:
		_ = srv.Close()
		<-errc
		fmt.Fprintf(os.Stderr, "httpserver: %v, stopped\n", s)
		return nil
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}
