// Package serve implements `cnibench serve`.
package servecmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/internal/cli/clierr"
	"github.com/cnibench/cnibench/internal/cli/streams"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/server"
)

type flagpole struct {
	Listen        string
	ServiceListen string
	HTTPListen    string
	HTTPBody      string
	Token         string
	MaxSessions   int
	MaxPending    int
	MaxFlows      int
	MaxBufferMem  string
	HelloTimeout  time.Duration
	IdleTimeout   time.Duration
	MaxWindow     time.Duration
}

// NewCommand returns the serve command.
func NewCommand(logger *slog.Logger, s streams.IOStreams) *cobra.Command {
	flags := &flagpole{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve cnibench clients (the server side of every test)",
		Long: "Serve listens for cnibench clients and runs the server side of their tests.\n" +
			"It serves many clients and tests at once, until interrupted, within the limits\n" +
			"below; a request over a limit is refused with a message naming the flag.\n" +
			"With a token (--token or $" + engine.TokenEnv + ") only clients that know it are served.\n" +
			"See docs/security.md for the threat model.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runE(cmd, logger, s, flags)
		},
	}
	d := server.DefaultLimits()
	fl := cmd.Flags()
	fl.StringVar(&flags.Listen, "listen", ":"+strconv.Itoa(engine.DefaultPort), "control address ADDR:PORT to listen on")
	fl.StringVar(&flags.ServiceListen, "service-listen", "", "also serve service-mode tcp_rr/tcp_crr/tcp_stream (no session: any server with the same token answers any connection, as behind a load-balanced service) on ADDR:PORT, or on several separated by commas; needs the token")
	fl.StringVar(&flags.HTTPListen, "http-listen", "", "also answer every HTTP GET on `ADDR:PORT` with --http-body bytes (no session: the backend of a load-balanced service for cnibench run --test http --url); each connection takes one of --max-flows")
	fl.StringVar(&flags.HTTPBody, "http-body", "1024", "body bytes of --http-listen's answers")
	fl.StringVar(&flags.Token, "token", "", "shared secret clients must send (default $"+engine.TokenEnv+"; the variable keeps it out of the process list)")
	fl.IntVar(&flags.MaxSessions, "max-sessions", d.MaxSessions, "sessions served at once")
	fl.IntVar(&flags.MaxPending, "max-pending", d.MaxPending, "connections waiting for their hello; when full the oldest is dropped")
	fl.IntVar(&flags.MaxFlows, "max-flows", d.MaxFlows, "flows of all sessions together (each tcp/udp flow is an OS thread)")
	fl.StringVar(&flags.MaxBufferMem, "max-buffer-mem", strconv.FormatInt(d.MaxBufferBytes>>20, 10)+"M", "data-plane buffer memory of all sessions together, e.g. 256M")
	fl.DurationVar(&flags.HelloTimeout, "hello-timeout", d.HelloTimeout, "time a new connection has to send its hello")
	fl.DurationVar(&flags.IdleTimeout, "idle-timeout", d.IdleTimeout, "silence after which a control connection (beyond the window its client declared) or a data connection is closed")
	fl.DurationVar(&flags.MaxWindow, "max-window", d.MaxWindow, "longest warm-up plus window a client may declare")
	return cmd
}

func runE(cmd *cobra.Command, logger *slog.Logger, s streams.IOStreams, flags *flagpole) error {
	addr := flags.Listen
	if _, _, err := net.SplitHostPort(addr); err != nil {
		// A bare address or port.
		if _, perr := strconv.Atoi(addr); perr == nil {
			addr = ":" + addr
		} else {
			addr = net.JoinHostPort(addr, strconv.Itoa(engine.DefaultPort))
		}
	}
	lim, err := flags.limits()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return clierr.Usagef("--listen %s: %v", flags.Listen, err)
	}
	auth := "no token: any peer that reaches this port can run tests"
	if lim.Token != "" {
		auth = "token required"
	}
	fmt.Fprintf(s.ErrOut, "cnibench serve: listening on %s (protocol v%d; %s; up to %d sessions, %d flows, %s of buffers)\n",
		ln.Addr(), engine.ProtoVersion, auth, lim.MaxSessions, lim.MaxFlows, flags.MaxBufferMem)
	srv := server.NewServer(logger)
	srv.Limits = lim
	type extra struct {
		name string
		ln   net.Listener
		run  func(context.Context, net.Listener) error
	}
	var extras []extra
	closeAll := func() {
		ln.Close()
		for _, x := range extras {
			x.ln.Close()
		}
	}
	if flags.ServiceListen != "" {
		if lim.Token == "" {
			closeAll()
			return clierr.Usagef("--service-listen %s: needs a token (--token or $%s): its port serves anyone who proves it", flags.ServiceListen, engine.TokenEnv)
		}
		// Several ports: paths that must not share the server's TIME_WAIT
		// sockets (a connection through a VIP and one to the pod itself
		// carry different TCP timestamp offsets for the same 4-tuple, so
		// one path's TIME_WAIT would refuse the other's SYNs) get one each.
		for _, addr := range strings.Split(flags.ServiceListen, ",") {
			sln, err := net.Listen("tcp", strings.TrimSpace(addr))
			if err != nil {
				closeAll()
				return clierr.Usagef("--service-listen %s: %v", addr, err)
			}
			extras = append(extras, extra{"service mode", sln, srv.ServeService})
		}
	}
	if flags.HTTPListen != "" {
		body, err := engine.ParseSize(flags.HTTPBody)
		if err != nil || body < 0 || body > engine.MaxHTTPBody {
			closeAll()
			return clierr.Usagef("--http-body %q: must be a size between 0 and %d bytes, e.g. 1K", flags.HTTPBody, engine.MaxHTTPBody)
		}
		hln, err := net.Listen("tcp", flags.HTTPListen)
		if err != nil {
			closeAll()
			return clierr.Usagef("--http-listen %s: %v", flags.HTTPListen, err)
		}
		extras = append(extras, extra{fmt.Sprintf("http (%d-byte bodies)", body), hln, func(ctx context.Context, l net.Listener) error {
			return srv.ServeHTTPBody(ctx, l, int(body))
		}})
	}
	if len(extras) == 0 {
		return srv.Serve(cmd.Context(), ln)
	}
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	errs := make(chan error, len(extras))
	for _, x := range extras {
		fmt.Fprintf(s.ErrOut, "cnibench serve: %s on %s\n", x.name, x.ln.Addr())
		go func() { errs <- x.run(ctx, x.ln) }()
	}
	err = srv.Serve(ctx, ln)
	cancel()
	for range extras {
		err = errors.Join(err, <-errs)
	}
	return err
}

// limits checks the limit flags and reads the token.
func (f *flagpole) limits() (server.Limits, error) {
	lim := server.Limits{
		MaxSessions: f.MaxSessions, MaxPending: f.MaxPending, MaxFlows: f.MaxFlows,
		HelloTimeout: f.HelloTimeout, IdleTimeout: f.IdleTimeout, MaxWindow: f.MaxWindow,
		Token: f.Token,
	}
	if lim.Token == "" {
		lim.Token = os.Getenv(engine.TokenEnv)
	}
	for _, c := range []struct {
		name string
		v    int
	}{{"max-sessions", f.MaxSessions}, {"max-pending", f.MaxPending}, {"max-flows", f.MaxFlows}} {
		if c.v < 1 {
			return lim, clierr.Usagef("--%s %d: must be at least 1", c.name, c.v)
		}
	}
	mem, err := engine.ParseSize(f.MaxBufferMem)
	if err != nil || mem < 1<<20 {
		return lim, clierr.Usagef("--max-buffer-mem %s: must be a size of at least 1M, e.g. 256M", f.MaxBufferMem)
	}
	lim.MaxBufferBytes = int64(mem)
	for _, c := range []struct {
		name string
		v    time.Duration
	}{{"hello-timeout", f.HelloTimeout}, {"idle-timeout", f.IdleTimeout}, {"max-window", f.MaxWindow}} {
		if c.v < time.Second {
			return lim, clierr.Usagef("--%s %s: must be at least 1s", c.name, c.v)
		}
	}
	return lim, nil
}
