package mtu

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/lab"
	_ "github.com/cnibench/cnibench/internal/lab/datapaths" // the standard datapaths register themselves
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/internal/testutil"
)

// testLab gives the scenario a lab's datapath without the suite.
type testLab struct {
	backend.Deployment
	l *lab.Lab
}

func (d testLab) LabAccess(datapath string) (*lab.Access, error) {
	dp, topo, err := d.l.Datapath(datapath)
	if err != nil {
		return nil, err
	}
	ep, ok := topo.Path(lab.CrossNode)
	if !ok {
		return nil, errors.New("no cross-node path")
	}
	return &lab.Access{Endpoint: ep, Topology: topo, Datapath: dp}, nil
}

// transferBytes is what each point tries to send: a few hundred jumbo
// segments.
const transferBytes = 4 << 20

// TestBlackHoleOnVXLAN: on vxlan over a 9000-byte wire, the correct pod
// MTU carries a transfer without ICMP; a too-large one with ICMP passed
// learns the path MTU (8950) from the node's fragmentation-needed and
// completes; with it dropped the transfer is black-holed: it stalls,
// retransmits, the client never hears of the path MTU, and next to
// nothing reaches the server. The nft table is gone after each point.
func TestBlackHoleOnVXLAN(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	ctx := context.Background()
	l := lab.New(nil)
	if err := l.Up(ctx, lab.Options{Datapaths: []string{"vxlan"}, MTU: 9000}); err != nil {
		testutil.SkipIfNotSupported(t, err, lab.ErrNotSupported)
		t.Fatalf("lab up: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Down(context.Background()); err != nil {
			t.Errorf("lab down: %v", err)
		}
	})
	dep := testLab{l: l}
	acc, err := dep.LabAccess("vxlan")
	if err != nil {
		t.Fatal(err)
	}
	srv := startSink(t, acc.Endpoint.Server, acc.Endpoint.ServerIP)
	env := scenario.Env{Deployment: dep, Datapath: "vxlan", Path: backend.Path{Target: srv.String()}}
	s, err := New(Options{Settings: []string{MTUCorrect, MTUTooLarge}})
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		complete, learnt bool
		pmtu, podMTU     float64
	}{
		"correct/pass":   {complete: true, pmtu: 8950, podMTU: 8950},
		"too-large/pass": {complete: true, learnt: true, pmtu: 8950, podMTU: 9000},
		"too-large/drop": {complete: false, pmtu: 9000, podMTU: 9000},
	}
	for _, p := range s.Points() {
		name := p.Labels[LabelPodMTU] + "/" + p.Labels[LabelICMP]
		want := tests[name]
		t.Run(name, func(t *testing.T) {
			prep, err := s.Prepare(ctx, env, p)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if _, err := prep.Close(ctx); err != nil {
					t.Error(err)
				}
				if _, err := fragNeededCount(acc.Topology.Nodes[0]); err == nil {
					t.Error("the nft table outlived Close")
				}
				if got, _ := linkMTU(acc.Endpoint.Client, lab.PodIf); got != 8950 {
					t.Errorf("client MTU %d after Close, want 8950", got)
				}
			}()
			if got := prep.Metrics()[MetricPodMTU]; got != want.podMTU {
				t.Errorf("pod MTU %v, want %v", got, want.podMTU)
			}
			end, err := prep.(scenario.Checker).BeginCell(scenario.Cell{Test: "tcp_stream", Flows: 1})
			if err != nil {
				t.Fatal(err)
			}
			sent, complete := send(t, acc.Endpoint.Client, srv, 3*time.Second)
			m, err := end()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("sent %d bytes (complete %v): %v", sent, complete, m)
			if complete != want.complete {
				t.Errorf("transfer complete %v, want %v", complete, want.complete)
			}
			if m[MetricPMTU] != want.pmtu || (m[MetricPMTULearnt] == 1) != want.learnt {
				t.Errorf("path MTU after %v (learnt %v), want %v (learnt %v)", m[MetricPMTU], m[MetricPMTULearnt], want.pmtu, want.learnt)
			}
			switch name {
			case "correct/pass":
				if m[MetricFragNeeded] != 0 || m[MetricServerBytes] < transferBytes {
					t.Errorf("frag-needed %v, server got %v bytes", m[MetricFragNeeded], m[MetricServerBytes])
				}
			case "too-large/pass":
				if m[MetricFragNeeded] == 0 || m[MetricUnreachRcvd] == 0 {
					t.Errorf("frag-needed sent %v, received %v: want both", m[MetricFragNeeded], m[MetricUnreachRcvd])
				}
			case "too-large/drop":
				if m[MetricFragNeeded] == 0 || m[MetricUnreachRcvd] != 0 || m[MetricRetransSegs] == 0 || m[MetricServerBytes] > transferBytes/4 {
					t.Errorf("black hole not shown: frag-needed sent %v, received %v, retransmissions %v, server got %v bytes",
						m[MetricFragNeeded], m[MetricUnreachRcvd], m[MetricRetransSegs], m[MetricServerBytes])
				}
			}
		})
	}
}

// startSink listens in the server pod and discards what it reads.
func startSink(t *testing.T, ns *lab.NS, ip netip.Addr) netip.AddrPort {
	t.Helper()
	var ln net.Listener
	if err := ns.Do(func() (err error) {
		ln, err = net.Listen("tcp4", netip.AddrPortFrom(ip, 0).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	return netip.MustParseAddrPort(ln.Addr().String())
}

// send writes transferBytes from the client pod to to within limit; it
// reports what it wrote and whether the kernel could send it all (the
// socket's send queue drained).
func send(t *testing.T, ns *lab.NS, to netip.AddrPort, limit time.Duration) (int64, bool) {
	t.Helper()
	var c net.Conn
	if err := ns.Do(func() (err error) {
		c, err = net.DialTimeout("tcp4", to.String(), time.Second)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetWriteDeadline(time.Now().Add(limit))
	var n atomic.Int64
	buf := make([]byte, 64<<10)
	for n.Load() < transferBytes {
		k, err := c.Write(buf)
		n.Add(int64(k))
		if err != nil {
			return n.Load(), false
		}
	}
	// Written is not sent: close the write side and wait for the sink to
	// close after reading everything.
	_ = c.(*net.TCPConn).CloseWrite()
	_ = c.SetReadDeadline(time.Now().Add(limit))
	_, err := c.Read(make([]byte, 1))
	return n.Load(), errors.Is(err, io.EOF)
}
