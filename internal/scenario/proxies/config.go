package proxies

import (
	"bytes"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
)

// Ports of the scenario (inside lab namespaces only).
const (
	// ServerHTTPPort is where `cnibench serve --http-listen` answers in the
	// server pod (every address of the pod: its own and loopback).
	ServerHTTPPort = 8080
	// ServerControlPort is that server's control port, on the server
	// pod's loopback (the suite's own server keeps the default port).
	ServerControlPort = 12879
	// NodeProxyPort is the node proxy's port on the client's node.
	NodeProxyPort = 15080
	// OutboundPort is the client-side sidecar's port on the client pod's
	// loopback (Istio's outbound listener port).
	OutboundPort = 15001
	// InboundPort is the server-side sidecar's port on the server pod's
	// address (Istio's inbound listener port).
	InboundPort = 15006
)

// ProxyConfig is one proxy instance: where it listens, where it forwards,
// and whether connections are kept alive on both sides.
type ProxyConfig struct {
	// Kind is HAProxy or Nginx.
	Kind string
	// Role names the hop: RoleNode, RoleClientSidecar, RoleServerSidecar.
	Role string
	// Listen is the address the proxy accepts on.
	Listen netip.AddrPort
	// Upstream is the address it forwards every request to.
	Upstream netip.AddrPort
	// Source, when valid, is the source address of the upstream
	// connections (the node proxy's router address in the node's pod
	// CIDR, as Cilium's cilium_host: the lab's nodes forward only
	// pod-to-pod traffic).
	Source netip.Addr
	// KeepAlive reuses connections on both sides (false: the proxy closes
	// its upstream connection after each response, and the client's).
	KeepAlive bool
	// Dir is the instance's own directory: configuration, pid file,
	// nginx's temporary paths.
	Dir string
}

// Roles of the proxies (their metrics' names).
const (
	RoleNode          = "node"
	RoleClientSidecar = "client_sidecar"
	RoleServerSidecar = "server_sidecar"
)

// Metrics every proxied cell gets, summed over the point's proxies; each
// proxy's own are "proxy_<role>_cpu_seconds" and "proxy_<role>_cpu_pct".
const (
	MetricCPUSeconds = "proxy_cpu_seconds"
	MetricCPUPct     = "proxy_cpu_pct"
)

// RoleMetric names a proxy's own metric: RoleMetric(RoleNode, "cpu_pct")
// is "proxy_node_cpu_pct".
func RoleMetric(role, what string) string { return "proxy_" + role + "_" + what }

// Timeouts of both proxies: bounded, long enough never to cut a cell.
const (
	timeoutConnect = "5s"
	timeoutIdle    = "60s"
)

// ConfigFile is the name of the instance's configuration in its Dir.
func (c ProxyConfig) ConfigFile() string {
	if c.Kind == Nginx {
		return filepath.Join(c.Dir, "nginx.conf")
	}
	return filepath.Join(c.Dir, "haproxy.cfg")
}

// Args are the proxy's arguments (the program is Kind): in the
// foreground, with its own configuration and nothing of /etc.
func (c ProxyConfig) Args() []string {
	if c.Kind == Nginx {
		// -e: the error log before the configuration is read (else the
		// compiled-in /var/log/nginx/error.log); -p: relative paths.
		return []string{"-c", c.ConfigFile(), "-p", c.Dir + "/", "-e", "stderr", "-g", "daemon off;"}
	}
	return []string{"-f", c.ConfigFile(), "-db"}
}

// Render returns the proxy's configuration file.
func (c ProxyConfig) Render() ([]byte, error) {
	switch {
	case !c.Listen.IsValid() || c.Listen.Port() == 0:
		return nil, fmt.Errorf("%s %s: no listen address", c.Kind, c.Role)
	case !c.Upstream.IsValid() || c.Upstream.Port() == 0:
		return nil, fmt.Errorf("%s %s: no upstream address", c.Kind, c.Role)
	case c.Dir == "" || !filepath.IsAbs(c.Dir) || strings.ContainsAny(c.Dir, " \t\n;\"'{}#"):
		return nil, fmt.Errorf("%s %s: directory %q must be an absolute path without spaces, quotes, braces, ';' or '#'", c.Kind, c.Role, c.Dir)
	}
	switch c.Kind {
	case HAProxy:
		return c.haproxy(), nil
	case Nginx:
		return c.nginx(), nil
	}
	return nil, fmt.Errorf("unknown proxy %q (must be among haproxy, nginx)", c.Kind)
}

// haproxy is HAProxy's configuration: one thread, mode http, keep-alive
// on both sides (`option http-keep-alive`, idle server connections reused)
// or closed after each response (`option http-server-close` towards the
// server; the client, sending Connection: close, closes its side).
func (c ProxyConfig) haproxy() []byte {
	var b bytes.Buffer
	source := ""
	if c.Source.IsValid() {
		source = " source " + c.Source.String()
	}
	mode := "option http-server-close"
	if c.KeepAlive {
		mode = "option http-keep-alive\n    http-reuse always"
	}
	fmt.Fprintf(&b, `# cnibench proxies scenario: HAProxy as the %[1]s proxy (generated; not the host's).
global
    nbthread 1
    maxconn 8192

defaults
    mode http
    %[2]s
    timeout connect %[3]s
    timeout client %[4]s
    timeout server %[4]s
    timeout http-request %[4]s
    timeout http-keep-alive %[4]s

frontend in
    bind %[5]s
    default_backend out

backend out
    server upstream %[6]s%[7]s
`, c.Role, mode, timeoutConnect, timeoutIdle, c.Listen, c.Upstream, source)
	return b.Bytes()
}

// nginx is nginx's configuration: one worker (plus its master), every
// path in Dir, no access log, keep-alive on both sides (upstream
// keepalive with HTTP/1.1) or a connection per request on both sides.
func (c ProxyConfig) nginx() []byte {
	var b bytes.Buffer
	clientKA, upstreamKA, proxyHTTP := "keepalive_timeout 0;", "", ""
	if c.KeepAlive {
		clientKA = "keepalive_timeout " + timeoutIdle + ";\n    keepalive_requests 1000000;"
		upstreamKA = "\n        keepalive 64;\n        keepalive_requests 1000000;\n        keepalive_timeout " + timeoutIdle + ";"
		proxyHTTP = "\n            proxy_http_version 1.1;\n            proxy_set_header Connection \"\";"
	}
	if c.Source.IsValid() {
		proxyHTTP += "\n            proxy_bind " + c.Source.String() + ";"
	}
	fmt.Fprintf(&b, `# cnibench proxies scenario: nginx as the %[1]s proxy (generated; not the host's).
user root;
worker_processes 1;
pid %[2]s/nginx.pid;
error_log stderr warn;

events {
    worker_connections 1024;
}

http {
    access_log off;
    client_body_temp_path %[2]s/client_body;
    proxy_temp_path %[2]s/proxy;
    fastcgi_temp_path %[2]s/fastcgi;
    uwsgi_temp_path %[2]s/uwsgi;
    scgi_temp_path %[2]s/scgi;
    %[3]s

    upstream upstream {
        server %[4]s;%[5]s
    }

    server {
        listen %[6]s;
        location / {
            proxy_pass http://upstream;%[7]s
            proxy_connect_timeout %[8]s;
            proxy_read_timeout %[9]s;
            proxy_send_timeout %[9]s;
        }
    }
}
`, c.Role, c.Dir, clientKA, c.Upstream, upstreamKA, c.Listen, proxyHTTP, timeoutConnect, timeoutIdle)
	return b.Bytes()
}
