package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/sock"
)

// control is an open control connection.
type control struct {
	c  net.Conn
	br *bufio.Reader
}

// external reports whether there is no cnibench server (an external HTTP
// server given by --url): calls are then answered locally with empty stats.
func (ct *control) external() bool { return ct == nil }

func (ct *control) call(m *engine.Msg, want string, timeout time.Duration) (*engine.Msg, error) {
	if ct.external() {
		switch want {
		case engine.MsgReady:
			return &engine.Msg{Type: want, Ready: &engine.Ready{}}, nil
		case engine.MsgStats:
			return &engine.Msg{Type: want, Stats: &engine.SrvStats{}}, nil
		}
		return &engine.Msg{Type: want}, nil
	}
	_ = ct.c.SetDeadline(time.Now().Add(timeout))
	defer ct.c.SetDeadline(time.Time{})
	if err := engine.WriteMsg(ct.c, m); err != nil {
		return nil, fmt.Errorf("send %s: %w", m.Type, err)
	}
	r, err := engine.ReadMsg(ct.br)
	if err != nil {
		return nil, fmt.Errorf("wait for %s: %w", want, err)
	}
	if r.Type == engine.MsgError {
		if r.Code == engine.CodeRefused || r.Code == engine.CodeAuth {
			return nil, fmt.Errorf("%w: %s", engine.ErrRefused, r.Error)
		}
		return nil, fmt.Errorf("server: %s", r.Error)
	}
	if r.Type != want {
		return nil, fmt.Errorf("server sent %s, want %s", r.Type, want)
	}
	return r, nil
}

// dialControl opens a control connection, says hello and checks the
// server's protocol. A refusal (budget, token) is returned as is: one line
// naming the limit and the flag that raises it.
func dialControl(ctx context.Context, host string, port int, timeout time.Duration, hello *engine.Hello) (*control, error) {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("connect to cnibench server: %w (is `cnibench serve` running there?)", err)
	}
	ct := &control{c: c, br: bufio.NewReader(c)}
	r, err := ct.call(&engine.Msg{Type: engine.MsgHello, Hello: hello}, engine.MsgHello, timeout)
	if err != nil {
		c.Close()
		if errors.Is(err, engine.ErrRefused) {
			return nil, err
		}
		return nil, fmt.Errorf("handshake with %s: %w", c.RemoteAddr(), err)
	}
	if err := engine.CheckHello(r.Hello); err != nil {
		c.Close()
		return nil, err
	}
	return ct, nil
}

// pathMTU is the kernel's path MTU towards the server (IP_MTU on the
// connected control socket), or 0 if unknown.
func (ct *control) pathMTU() int {
	if ct.external() {
		return 0
	}
	tc, ok := ct.c.(*net.TCPConn)
	if !ok {
		return 0
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return 0
	}
	v6 := false
	if a, ok := ct.c.RemoteAddr().(*net.TCPAddr); ok {
		v6 = a.IP.To4() == nil
	}
	mtu := 0
	_ = raw.Control(func(fd uintptr) {
		if m, err := sock.PathMTU(int(fd), v6); err == nil {
			mtu = m
		}
	})
	return mtu
}
