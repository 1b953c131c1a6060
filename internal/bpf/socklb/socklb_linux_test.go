//go:build linux && (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64)

package socklb

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/hostinfo"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/testutil"
	"github.com/cnibench/cnibench/internal/testutil/nstest"
)

// childEnv makes the test binary the client process of
// TestSocketLB (TestSocketLBChild runs then).
const childEnv = "CNB_SOCKLB_CHILD"

// TestSocketLBChild is the client TestSocketLB starts inside the cgroup
// the programs are attached to: it connects over TCP to the VIP in
// $CNB_SOCKLB_VIP, echoes a byte and prints the peer getpeername reports
// and the local address; then it sends a UDP datagram to the VIP from an
// unconnected socket and prints the source of the reply; then it connects
// to the service without backends in $CNB_SOCKLB_EMPTY and prints the error.
func TestSocketLBChild(t *testing.T) {
	if os.Getenv(childEnv) != "1" {
		t.Skip("the client process of TestSocketLB")
	}
	vip := os.Getenv("CNB_SOCKLB_VIP")
	c, err := net.DialTimeout("tcp4", vip, 2*time.Second)
	if err != nil {
		fmt.Printf("tcp error %v\n", err)
		return
	}
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 1)
	if _, err := c.Write([]byte("x")); err == nil {
		_, err = c.Read(buf)
	}
	fmt.Printf("tcp peer %s echo %q err %v\n", c.RemoteAddr(), buf, err)
	c.Close()

	u, err := net.ListenUDP("udp4", nil)
	if err != nil {
		fmt.Printf("udp error %v\n", err)
		return
	}
	_ = u.SetDeadline(time.Now().Add(2 * time.Second))
	to := net.UDPAddrFromAddrPort(netip.MustParseAddrPort(vip))
	if _, err := u.WriteToUDP([]byte("y"), to); err != nil {
		fmt.Printf("udp error %v\n", err)
		return
	}
	n, from, err := u.ReadFromUDPAddrPort(buf)
	fmt.Printf("udp from %s echo %q err %v\n", from, buf[:n], err)
	u.Close()

	_, err = net.DialTimeout("tcp4", os.Getenv("CNB_SOCKLB_EMPTY"), 2*time.Second)
	fmt.Printf("empty error %v\n", err)
}

// TestSocketLB attaches the programs to a fresh cgroup v2 directory and
// runs a client in it, inside a scratch network namespace whose loopback
// holds two backends (TCP and UDP echo) and no VIP at all, and no netfilter
// rule: the client reaches the backends only through the rewrite, sees the
// VIP as its peer (getpeername4) and as the source of replies (recvmsg4),
// and a service without backends refuses connect. A process outside the
// cgroup is not translated (its connect to the VIP fails).
func TestSocketLB(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	cg := newTestCgroup(t)
	do, _ := nstest.LoopbackNS(t, "198.18.1.2", "198.18.2.2")
	var backends []netip.AddrPort
	for _, a := range []string{"198.18.1.2", "198.18.2.2"} {
		ip := netip.MustParseAddr(a)
		tcp := testutil.StartTCPEcho(t, do, ip)
		testutil.StartUDPEchoAt(t, do, netip.AddrPortFrom(ip, tcp.Port()))
		backends = append(backends, tcp)
	}
	vip := netip.MustParseAddrPort("198.19.0.10:80")
	empty := netip.MustParseAddrPort("198.19.0.11:80")
	testutil.SkipIfNotSupported(t, Probe(), ErrNotSupported)
	lb, err := Load([]Service{{VIP: vip, Backends: backends}, {VIP: empty}})
	testutil.SkipIfNotSupported(t, err, ErrNotSupported)
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	if err := lb.Attach(cg.dir); err != nil {
		testutil.SkipIfNotSupported(t, err, ErrNotSupported)
		t.Fatal(err)
	}

	run := func(inCgroup bool) string {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^TestSocketLBChild$", "-test.v")
		cmd.Env = append(os.Environ(), childEnv+"=1", "CNB_SOCKLB_VIP="+vip.String(), "CNB_SOCKLB_EMPTY="+empty.String())
		if inCgroup {
			cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: cg.fd}
		}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := do(cmd.Start); err != nil {
			t.Fatalf("start client: %v", err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("client: %v\n%s", err, out.String())
		}
		return out.String()
	}
	out := run(true)
	t.Logf("client in the cgroup:\n%s", out)
	lines := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), " "); ok && (k == "tcp" || k == "udp" || k == "empty") {
			lines[k] = v
		}
	}
	if want := fmt.Sprintf("peer %s echo \"x\" err <nil>", vip); lines["tcp"] != want {
		t.Errorf("TCP through the VIP: %q, want %q (full output:\n%s)", lines["tcp"], want, out)
	}
	if want := fmt.Sprintf("from %s echo \"y\" err <nil>", vip); lines["udp"] != want {
		t.Errorf("UDP through the VIP: %q, want %q", lines["udp"], want)
	}
	if !strings.Contains(lines["empty"], "operation not permitted") {
		t.Errorf("service without backends: %q, want connect refused (EPERM)", lines["empty"])
	}
	c, err := lb.Counters()
	if err != nil {
		t.Fatal(err)
	}
	// connect (TCP), sendmsg (UDP); getpeername, recvmsg; the empty service.
	t.Logf("counters %+v", c)
	if c.Forward < 2 || c.Reverse < 2 || c.NoBackend != 1 {
		t.Errorf("counters %+v: want forward >= 2, reverse >= 2, no-backend 1", c)
	}
	// Negative control: outside the cgroup nothing is translated, and
	// nothing in the namespace answers on the VIP.
	if out := run(false); !strings.Contains(out, "tcp error") {
		t.Errorf("client outside the cgroup reached the VIP:\n%s", out)
	}
	if c2, _ := lb.Counters(); c2.Forward != c.Forward {
		t.Errorf("a client outside the cgroup was translated: %+v -> %+v", c, c2)
	}
	if err := lb.Close(); err != nil {
		t.Fatal(err)
	}
}

type testCgroup struct {
	dir string
	fd  int
}

// newTestCgroup creates a cgroup v2 directory below this process's own and
// removes it when the test ends (its client processes have exited by then).
func newTestCgroup(t *testing.T) *testCgroup {
	t.Helper()
	base, err := hostinfo.CgroupDir()
	if err != nil {
		t.Skipf("cgroup sock_addr programs need a cgroup v2 directory: %v", err)
	}
	dir := filepath.Join(base, fmt.Sprintf("cnb-socklb-test-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = os.Remove(dir)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		unix.Close(fd)
		if err := lab.KillCgroup(dir); err != nil {
			t.Error(err)
		}
	})
	return &testCgroup{dir: dir, fd: fd}
}

// TestProbe: Probe reports this machine able, or why not, and leaves
// nothing behind (its load is closed, its namespace scratch).
func TestProbe(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	err := Probe()
	testutil.SkipIfNotSupported(t, err, ErrNotSupported)
}
