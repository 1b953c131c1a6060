package apps

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
)

// Ports of the daemons inside the server pod's namespace (non-default, so
// that nothing is mistaken for a host service).
const (
	HTTPPort    = 18080
	FTPPort     = 10021
	SSHPort     = 10022
	PasvMinPort = 30000
	PasvMaxPort = 30099
)

// layout is where one daemon's files live in its temporary directory.
type layout struct {
	// Dir is the daemon's directory (configs, keys, logs, pid files).
	Dir string
	// Files is the served directory (the test files).
	Files string
}

func newLayout(dir string) layout {
	return layout{Dir: dir, Files: filepath.Join(dir, "files")}
}

func (l layout) path(name string) string { return filepath.Join(l.Dir, name) }

// nginxConf is nginx's configuration: one worker, in the foreground, every
// path (pid, logs, temporary files) in the daemon's directory, serving
// Files on ip:port with keep-alive allowed (the client chooses: curl
// sends Connection: close when keep-alive is off).
func nginxConf(l layout, ip netip.Addr) string {
	tmp := l.path("tmp")
	return fmt.Sprintf(`# cnibench apps scenario: nginx in the server pod's namespace (generated)
daemon off;
master_process on;
worker_processes 1;
user root;
pid %[1]s;
error_log %[2]s warn;
events {
    worker_connections 1024;
}
http {
    access_log %[3]s;
    sendfile on;
    tcp_nopush on;
    keepalive_timeout 65;
    keepalive_requests 1000000;
    default_type application/octet-stream;
    types { }
    client_body_temp_path %[4]s/body;
    proxy_temp_path %[4]s/proxy;
    fastcgi_temp_path %[4]s/fastcgi;
    uwsgi_temp_path %[4]s/uwsgi;
    scgi_temp_path %[4]s/scgi;
    server {
        listen %[5]s;
        root %[6]s;
    }
}
`, l.path("nginx.pid"), l.path("nginx-error.log"), l.path("nginx-access.log"), tmp,
		netip.AddrPortFrom(ip, HTTPPort), l.Files)
}

// vsftpdConf is vsftpd's configuration: standalone in the foreground,
// anonymous read-only access to Files (as the package's ftp user, whose
// home vsftpd enters before its chroot to Files), passive mode on a
// fixed port range, no per-session namespaces (isolate=NO: their creation
// would dominate each connection's cost), its log in the directory.
func vsftpdConf(l layout, ip netip.Addr) string {
	return strings.Join([]string{
		"# cnibench apps scenario: vsftpd in the server pod's namespace (generated)",
		"listen=YES",
		"listen_ipv6=NO",
		"listen_address=" + ip.String(),
		fmt.Sprintf("listen_port=%d", FTPPort),
		"background=NO",
		"anonymous_enable=YES",
		"local_enable=NO",
		"write_enable=NO",
		"anon_root=" + l.Files,
		"no_anon_password=YES",
		"ftp_username=ftp",
		"nopriv_user=nobody",
		"anon_world_readable_only=YES",
		"pasv_enable=YES",
		fmt.Sprintf("pasv_min_port=%d", PasvMinPort),
		fmt.Sprintf("pasv_max_port=%d", PasvMaxPort),
		"port_enable=NO",
		"connect_from_port_20=NO",
		"secure_chroot_dir=" + l.path("empty"),
		"xferlog_enable=YES",
		"xferlog_std_format=NO",
		"vsftpd_log_file=" + l.path("vsftpd.log"),
		"isolate=NO",
		"isolate_network=NO",
		"max_clients=0",
		"max_per_ip=0",
		"hide_ids=YES",
		"use_sendfile=YES",
		"",
	}, "\n")
}

// sshdConf is sshd's configuration: key authentication only (the
// generated client key), no PAM, no pid file, SFTP served in-process (what
// scp speaks by default since OpenSSH 9.0), on ip:port.
func sshdConf(l layout, ip netip.Addr) string {
	return strings.Join([]string{
		"# cnibench apps scenario: sshd in the server pod's namespace (generated)",
		fmt.Sprintf("Port %d", SSHPort),
		"ListenAddress " + ip.String(),
		"HostKey " + l.path("ssh_host_ed25519_key"),
		"PidFile none",
		"UsePAM no",
		"PermitRootLogin prohibit-password",
		"PubkeyAuthentication yes",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"AuthorizedKeysFile " + l.path("authorized_keys"),
		"StrictModes no",
		"UseDNS no",
		"PrintMotd no",
		"PrintLastLog no",
		"X11Forwarding no",
		"MaxStartups 100:30:200",
		"MaxSessions 100",
		"LogLevel ERROR",
		"Subsystem sftp internal-sftp",
		"",
	}, "\n")
}
