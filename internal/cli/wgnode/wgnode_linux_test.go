package wgnodecmd_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/cnibench/cnibench/internal/cli/streams"
	wgnodecmd "github.com/cnibench/cnibench/internal/cli/wgnode"
	"github.com/cnibench/cnibench/internal/nsrun"
	"github.com/cnibench/cnibench/internal/testutil"
	"github.com/cnibench/cnibench/internal/wireguard"
)

// TestRunInNamespace runs wg-node in-process on a thread locked into a
// scratch namespace, as the suite runs it inside a node: the first stderr
// line is "ready", the device exists there, and cancelling the command's
// context (what SIGTERM does) ends it cleanly and removes the device.
func TestRunInNamespace(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	ns, err := nsrun.NewScratch()
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()

	priv, _, err := wireguard.GenerateKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	_, peer, err := wireguard.GenerateKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	stdin := fmt.Sprintf(`{"iface":"wgn0","private_key":%q,"peer_public_key":%q,"peer_endpoint":"198.18.211.2:51820",`+
		`"allowed_ips":["198.19.2.0/24"],"address":"10.201.0.1/24","mtu":1440}`, priv, peer)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errR, errW := io.Pipe()
	s := streams.IOStreams{In: strings.NewReader(stdin), Out: io.Discard, ErrOut: errW}
	done := make(chan error, 1)
	go func() {
		err := nsrun.Do(ns, func() error {
			cmd := wgnodecmd.NewCommand(slog.New(slog.NewTextHandler(io.Discard, nil)), s)
			cmd.SetArgs([]string{})
			return cmd.ExecuteContext(ctx)
		})
		errW.CloseWithError(fmt.Errorf("wg-node returned: %v", err))
		done <- err
	}()
	lines := bufio.NewScanner(errR)
	first := make(chan string, 1)
	go func() {
		if lines.Scan() {
			first <- lines.Text()
		}
		close(first)
		_, _ = io.Copy(io.Discard, errR)
	}()
	select {
	case l := <-first:
		_, port, ok := strings.Cut(l, ", userspace) listening on :")
		if p, err := strconv.Atoi(port); !strings.HasPrefix(l, "ready: wgn0 (wireguard-go ") || !ok || err != nil || p == 0 {
			t.Fatalf("first stderr line %q, want the ready line with the port the kernel chose", l)
		}
		t.Log(l)
	case <-time.After(10 * time.Second):
		t.Fatal("no ready line after 10 s")
	}
	l, err := h.LinkByName("wgn0")
	if err != nil {
		t.Fatalf("device not in the namespace: %v", err)
	}
	if l.Attrs().MTU != 1440 {
		t.Errorf("MTU %d, want 1440", l.Attrs().MTU)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("wg-node after cancel: %v, want a clean exit", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("wg-node still running 10 s after cancel")
	}
	if _, err := h.LinkByName("wgn0"); err == nil {
		t.Error("wgn0 still exists after wg-node ended")
	}
}
