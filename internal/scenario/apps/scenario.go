// Package apps is the real-applications scenario (issue 27, seed 002):
// files transferred by real daemons and clients from Debian's packages
// through the lab's datapaths — nginx serving curl over HTTP (keep-alive
// on and off), vsftpd serving curl over FTP (passive mode), and OpenSSH's
// sshd serving scp (its encryption on top of the datapath's).
//
// Every daemon runs inside the server pod's network namespace with its own
// configuration, keys, logs and files in a temporary directory of its own,
// on a non-default port, started by the scenario and killed when the point
// closes; nothing of the host's services or their files is started, read
// for configuration or changed. The clients run in the client pod's
// namespace. A cell is one file size (and keep-alive setting): transfers
// repeated back to back for the suite's window, each timed by the client's
// own report (curl's -w time_total; scp's process start to exit), with the
// CPU of the client processes (their rusage) and of the daemon's process
// tree (/proc) over exactly the measured transfers.
package apps

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/internal/scenario/encrypt"
)

// ScenarioName is the scenario's name (--scenario, the scenario label).
const ScenarioName = "apps"

// Labels of the scenario's results.
const (
	LabelApp       = "app"       // http, ftp, scp
	LabelSize      = "size"      // the file's size, e.g. 4KiB
	LabelKeepAlive = "keepalive" // on, off (http only)
)

// Applications (the app label).
const (
	HTTP = "http"
	FTP  = "ftp"
	SCP  = "scp"
)

// Apps are the applications in their fixed order.
var Apps = []string{HTTP, FTP, SCP}

// DefaultSizes are the default file sizes: small-object latency and bulk
// throughput.
var DefaultSizes = []string{"4KiB", "1MiB", "64MiB"}

// MaxSize bounds a file size (the files live in the run's temporary
// directory).
const MaxSize = 1 << 30

// InstallHint is the command that installs every daemon and client.
const InstallHint = "apt-get install nginx vsftpd openssh-server curl openssh-client"

// Test is the test label of an application's cells ("app_http", …).
func Test(app string) string { return "app_" + app }

// Options configure the scenario.
type Options struct {
	// Apps to run; empty: all.
	Apps []string
	// Sizes are the file sizes ("4KiB", "1MiB"; K, M, G powers of 1024);
	// empty: DefaultSizes.
	Sizes []string
	// Backend is where the points run (scenario.Common.Backend): on any
	// other than the lab ("" or "lab") every point is recorded skipped.
	Backend string
	// Encrypt are encryption families (EncryptFamilies: wireguard, ipsec)
	// whose tunnels, set up by the encryption scenario between the routed
	// datapath's nodes, the applications also run through: each
	// application's point is crossed with none and every mode with the
	// pods' MTU lowered. Empty (or "none" alone): no tunnel, no encryption
	// labels, any datapath with pods.
	Encrypt []string
}

// Scenario is the apps scenario (scenario.Scenario).
type Scenario struct {
	o     Options
	sizes []size
	enc   *encrypt.Scenario // nil: no tunnels
	state
}

// size is a file size and its label.
type size struct {
	label string
	bytes int64
}

// New validates o. Errors name the flag.
func New(o Options) (*Scenario, error) {
	if len(o.Apps) == 0 {
		o.Apps = slices.Clone(Apps)
	}
	seen := map[string]bool{}
	for _, a := range o.Apps {
		if !slices.Contains(Apps, a) {
			return nil, fmt.Errorf("--apps %q: must be among %s", a, strings.Join(Apps, ", "))
		}
		if seen[a] {
			return nil, fmt.Errorf("--apps %q: given twice", a)
		}
		seen[a] = true
	}
	if len(o.Sizes) == 0 {
		o.Sizes = slices.Clone(DefaultSizes)
	}
	enc, err := newEncrypt(o.Encrypt)
	if err != nil {
		return nil, err
	}
	s := &Scenario{o: o, enc: enc}
	for _, v := range o.Sizes {
		n, err := ParseSize(v)
		if err != nil {
			return nil, fmt.Errorf("--app-sizes %q: %w", v, err)
		}
		l := SizeLabel(n)
		if slices.ContainsFunc(s.sizes, func(x size) bool { return x.bytes == n }) {
			return nil, fmt.Errorf("--app-sizes %q: %s given twice", v, l)
		}
		s.sizes = append(s.sizes, size{label: l, bytes: n})
	}
	return s, nil
}

// ParseSize parses a file size: a whole number of bytes with an optional
// suffix K, M or G (powers of 1024; "KiB", "KB" and "k" alike), between 1
// byte and MaxSize.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimSuffix(t, "B")
	t = strings.TrimSuffix(t, "i")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'k', 'K':
			mult = 1 << 10
		case 'm', 'M':
			mult = 1 << 20
		case 'g', 'G':
			mult = 1 << 30
		}
		if mult != 1 {
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v < 1 || v > MaxSize/mult {
		return 0, fmt.Errorf("not a size between 1 and 1GiB (e.g. 4KiB, 1MiB, 64MiB)")
	}
	return v * mult, nil
}

// SizeLabel is a size's label: the largest binary unit that divides it
// ("4KiB", "64MiB", "1500B").
func SizeLabel(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// Name implements scenario.Scenario.
func (s *Scenario) Name() string { return ScenarioName }

// AnyDatapath: the apps need only the client and server pods, so every
// datapath with pods runs them (scenario.AnyDatapath) — except through
// the encryption scenario's tunnels (Options.Encrypt), which need a routed
// datapath's nodes.
func (s *Scenario) AnyDatapath() bool { return s.enc == nil }

// Points implements scenario.Scenario: one point per application (its
// daemon started once per point, every size and keep-alive setting a
// cell); an application whose programs are missing is skipped with the
// install command. With Options.Encrypt every application's point is
// crossed with the encryption points (crossEncrypt), one skipped when the
// machine lacks its implementation.
func (s *Scenario) Points() []scenario.Point {
	var out []scenario.Point
	encs := s.encryptPoints()
	for _, a := range s.o.Apps {
		skip := probe(a)
		if s.o.Backend != "" && s.o.Backend != "lab" {
			skip = ErrNeedsImage
		}
		p := scenario.Point{
			Labels: map[string]string{scenario.LabelScenario: ScenarioName, LabelApp: a},
			Skip:   skip,
		}
		if s.enc != nil {
			out = append(out, crossEncrypt(p, encs)...)
			continue
		}
		out = append(out, p)
	}
	return out
}

// ErrNeedsImage is the skip reason of every point on a cluster: its pods
// run cnibench's image, which holds no nginx, vsftpd or sshd.
var ErrNeedsImage = fmt.Errorf("%w: on a cluster the pods would need an image with nginx, vsftpd, sshd, curl and scp (cnibench's image has only cnibench)", scenario.ErrNeedsLab)

// Cells implements scenario.Celler: one cell per size (cross-node), for
// HTTP once with keep-alive on and once off.
func (s *Scenario) Cells(p scenario.Point) []scenario.Cell {
	app := p.Labels[LabelApp]
	var out []scenario.Cell
	for _, sz := range s.sizes {
		if app == HTTP {
			for _, ka := range []string{"on", "off"} {
				out = append(out, scenario.Cell{Test: Test(app), Flows: 1,
					Labels: map[string]string{LabelSize: sz.label, LabelKeepAlive: ka}})
			}
			continue
		}
		out = append(out, scenario.Cell{Test: Test(app), Flows: 1, Labels: map[string]string{LabelSize: sz.label}})
	}
	return out
}

// sizeOf is a cell's file size in bytes.
func (s *Scenario) sizeOf(c scenario.Cell) (int64, error) {
	for _, sz := range s.sizes {
		if sz.label == c.Labels[LabelSize] {
			return sz.bytes, nil
		}
	}
	return 0, fmt.Errorf("apps: no file of size %q", c.Labels[LabelSize])
}

// Config describes the scenario for the runs' config.
func (s *Scenario) Config() map[string]string {
	var sizes []string
	for _, sz := range s.sizes {
		sizes = append(sizes, sz.label)
	}
	m := map[string]string{
		"apps":         strings.Join(s.o.Apps, ","),
		"app_sizes":    strings.Join(sizes, ","),
		"apps_servers": "nginx (HTTP), vsftpd (FTP, passive), OpenSSH sshd (scp over SFTP), each started in the server pod's namespace with its own config in a temporary directory",
		"apps_clients": "curl (HTTP, FTP; -w time_total per transfer), scp (timed from process start to exit) in the client pod's namespace",
		"apps_cpu":     "client: rusage of the client processes (scp's ssh included); server: the daemon's cgroup (cpu.stat usage_usec), else its process tree from /proc; over the measured transfers",
	}
	if s.enc != nil {
		var ps []string
		for _, p := range s.encryptPoints() {
			ps = append(ps, p.Labels[encrypt.LabelEncryption]+"/"+p.Labels[encrypt.LabelCipher]+"/"+p.Labels[encrypt.LabelPodMTU])
		}
		m["apps_encryption_points"] = strings.Join(ps, ",")
		m["apps_encryption_proof"] = "AF_PACKET capture on node 2's wire during every cell: through a tunnel, no packet between the client and server pods' addresses in clear, at least 100 of the tunnel's frames and a capture that kept up; none: the pods' packets seen in clear (negative control)"
	}
	return m
}
