package engine

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/pkg/result"
)

// Test names, as in netperf where one exists; defined once in pkg/result,
// with which results label their test.
const (
	TCPStream = result.TestTCPStream
	TCPRR     = result.TestTCPRR
	TCPCRR    = result.TestTCPCRR
	UDPStream = result.TestUDPStream
	UDPRR     = result.TestUDPRR
	HTTP      = result.TestHTTP
	ICMPEcho  = result.TestICMPEcho
	// TCPRRLoaded is tcp_rr measured while LoadFlows tcp_stream flows load
	// the same path (engine/client, loaded.go).
	TCPRRLoaded = result.TestTCPRRLoaded
)

// DefaultLoadFlows is tcp_rr_loaded's default number of load flows.
const DefaultLoadFlows = 4

// Tests lists every test the engine runs: all of result.Tests.
var Tests = result.Tests

// DefaultRepeat is the number of measured windows of a run: at least 5,
// so that two default runs can be compared (a Mann–Whitney U test of 3
// against 3 can never reach p < 0.1).
const DefaultRepeat = 5

// DefaultPort is the control port of `cnibench serve`.
const DefaultPort = 12870

// Limits on the configuration.
const (
	MaxFlows     = 256
	MaxHTTPFlows = 10000
	MaxMsgSize   = 1 << 20
	MaxUDPSize   = 65507
	MaxHTTPBody  = 64 << 20
)

// Config is one test's configuration. Zero values are replaced by the
// per-test defaults in Defaults.
type Config struct {
	Target   string        // host[:port] of the cnibench server
	Test     string        // one of Tests
	Duration time.Duration // measured window per repeat
	Warmup   time.Duration // traffic before the window opens
	Repeat   int           // number of measured windows
	Flows    int           // parallel connections (http: concurrent clients)

	ReqSize  int // rr/crr/udp_rr request bytes
	RespSize int // rr/crr/udp_rr response bytes
	MsgSize  int // stream write size / UDP datagram size

	// Service points tcp_rr or tcp_crr at HOST:PORT where one or more
	// `cnibench serve --service-listen` servers (e.g. the backends of a
	// load-balanced service) answer without a session: every connection
	// proves the token in a preamble (svcrr.go). The servers' CPU is not
	// measured.
	Service string
	// URL points the http test at an external HTTP server instead of a
	// cnibench server's HTTP data plane (server CPU is then not measured).
	URL string

	HTTPBody      int  // http response body bytes
	HTTPKeepAlive bool // reuse connections for http
	HTTPPath      string

	// Rate is the offered load in bits/s for stream tests and in trans/s
	// for the others; 0 means as fast as possible.
	Rate float64
	// BusyPoll makes the client spin on non-blocking sockets instead of
	// blocking in the kernel (lower latency, burns a core per flow).
	BusyPoll bool
	// Timeout bounds a single blocking socket operation.
	Timeout time.Duration
	// LoadFlows is tcp_rr_loaded's number of tcp_stream flows loading the
	// path while the rr flows are measured (--load-flows; 0 means
	// DefaultLoadFlows). Other tests refuse it.
	LoadFlows int
	// UDPHandshake makes every udp_stream flow send one datagram and wait
	// for the server's reply before its stream, as iperf3's UDP mode does
	// (--udp-handshake): a stateful firewall between them then holds the
	// flow as established, not new. Off by default; other tests refuse it.
	UDPHandshake bool
}

// Defaults returns cfg with unset fields filled in.
func Defaults(cfg Config) Config {
	if cfg.Duration == 0 {
		cfg.Duration = 10 * time.Second
	}
	if cfg.Warmup == 0 {
		cfg.Warmup = time.Second
	}
	if cfg.Warmup < 0 {
		cfg.Warmup = 0
	}
	if cfg.Repeat == 0 {
		cfg.Repeat = DefaultRepeat
	}
	if cfg.Flows == 0 {
		cfg.Flows = 1
		if cfg.Test == HTTP {
			cfg.Flows = 32
		}
	}
	if cfg.ReqSize == 0 {
		cfg.ReqSize = 1
		if cfg.Test == ICMPEcho {
			cfg.ReqSize = icmpDefaultPayload // as ping
		}
	}
	if cfg.RespSize == 0 {
		cfg.RespSize = 1
	}
	// udp_stream's datagram size stays 0 here: the client sets it to the
	// largest that fits the path MTU once it has connected (Client.Run).
	if cfg.MsgSize == 0 && cfg.Test != UDPStream {
		cfg.MsgSize = 128 << 10
	}
	if cfg.HTTPBody == 0 && cfg.Test == HTTP {
		cfg.HTTPBody = 1024
	}
	if cfg.HTTPPath == "" {
		cfg.HTTPPath = "/"
		first, _, _ := strings.Cut(cfg.URL, ",")
		if u, err := url.Parse(first); err == nil && cfg.URL != "" {
			cfg.HTTPPath = u.RequestURI()
		}
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.LoadFlows == 0 && cfg.Test == TCPRRLoaded {
		cfg.LoadFlows = DefaultLoadFlows
	}
	return cfg
}

// FieldError is a configuration error naming the offending field (as a
// command-line flag) and the fix.
type FieldError struct {
	Field string
	Value string
	Fix   string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("--%s %s: %s", e.Field, e.Value, e.Fix)
}

// Validate checks a defaulted Config.
func (cfg Config) Validate() error {
	if !ValidTest(cfg.Test) {
		return &FieldError{"test", quote(cfg.Test), "must be one of " + strings.Join(Tests, ", ")}
	}
	if cfg.URL != "" {
		var path string
		for i, one := range strings.Split(cfg.URL, ",") {
			u, err := url.Parse(one)
			if err != nil || u.Scheme != "http" || u.Host == "" {
				return &FieldError{"url", quote(cfg.URL), "must be an http:// URL with a host, e.g. http://198.18.0.10:8080/, or several separated by commas"}
			}
			if i > 0 && u.Path != path {
				return &FieldError{"url", quote(cfg.URL), "URLs of one run must have the same path"}
			}
			path = u.Path
		}
		if cfg.Test != HTTP {
			return &FieldError{"url", cfg.URL, "only the http test takes --url; drop it or use --test http"}
		}
		if cfg.Target != "" {
			return &FieldError{"target", cfg.Target, "give either --target (a cnibench server) or --url (an HTTP server), not both"}
		}
		return cfg.validateRest()
	}
	if cfg.Service != "" {
		if cfg.Test != TCPRR && cfg.Test != TCPCRR && cfg.Test != TCPStream {
			if cfg.Test == TCPRRLoaded {
				return &FieldError{"service", cfg.Service, "tcp_rr_loaded needs one cnibench server for its load session; use --target"}
			}
			return &FieldError{"service", cfg.Service, "only tcp_rr, tcp_crr and tcp_stream take --service; drop it or use --test tcp_rr"}
		}
		if cfg.Target != "" {
			return &FieldError{"target", cfg.Target, "give either --target (one cnibench server) or --service (servers behind a service address), not both"}
		}
		for _, one := range strings.Split(cfg.Service, ",") {
			if _, _, err := SplitTarget(one); err != nil || !strings.Contains(one, ":") {
				return &FieldError{"service", quote(cfg.Service), "must be HOST:PORT of `cnibench serve --service-listen`, e.g. 198.19.0.10:12871, or several separated by commas (connections then take them in turn)"}
			}
		}
		if cfg.Rate > 0 {
			return &FieldError{"rate", "", "service mode runs at full speed; drop --rate"}
		}
		return cfg.validateRest()
	}
	if cfg.Target == "" {
		return &FieldError{"target", `""`, "give the address of a running `cnibench serve`, e.g. --target 127.0.0.1"}
	}
	if _, _, err := SplitTarget(cfg.Target); err != nil {
		return &FieldError{"target", cfg.Target, err.Error()}
	}
	return cfg.validateRest()
}

func (cfg Config) validateRest() error {
	if cfg.Duration < 100*time.Millisecond || cfg.Duration > 24*time.Hour {
		return &FieldError{"duration", cfg.Duration.String(), "must be between 100ms and 24h"}
	}
	if cfg.Warmup > time.Hour {
		return &FieldError{"warmup", cfg.Warmup.String(), "must be at most 1h"}
	}
	if cfg.Repeat < 1 || cfg.Repeat > 1000 {
		return &FieldError{"repeat", strconv.Itoa(cfg.Repeat), "must be between 1 and 1000"}
	}
	maxFlows := MaxFlows
	if cfg.Test == HTTP {
		maxFlows = MaxHTTPFlows
	}
	if cfg.Flows < 1 || cfg.Flows > maxFlows {
		return &FieldError{"flows", strconv.Itoa(cfg.Flows), fmt.Sprintf("must be between 1 and %d", maxFlows)}
	}
	if cfg.ReqSize < 1 || cfg.ReqSize > MaxMsgSize {
		return &FieldError{"request-size", strconv.Itoa(cfg.ReqSize), fmt.Sprintf("must be between 1 and %d bytes", MaxMsgSize)}
	}
	if cfg.RespSize < 1 || cfg.RespSize > MaxMsgSize {
		return &FieldError{"response-size", strconv.Itoa(cfg.RespSize), fmt.Sprintf("must be between 1 and %d bytes", MaxMsgSize)}
	}
	if cfg.Test == UDPRR && (cfg.ReqSize > MaxUDPSize || cfg.RespSize > MaxUDPSize) {
		return &FieldError{"request-size", strconv.Itoa(cfg.ReqSize), fmt.Sprintf("udp_rr sizes must be at most %d bytes", MaxUDPSize)}
	}
	if cfg.Test == ICMPEcho && cfg.ReqSize > MaxICMPPayload {
		return &FieldError{"request-size", strconv.Itoa(cfg.ReqSize), fmt.Sprintf("icmp_echo payloads must be at most %d bytes", MaxICMPPayload)}
	}
	switch cfg.Test {
	case UDPStream:
		if cfg.MsgSize != 0 && (cfg.MsgSize < UDPStreamHeader || cfg.MsgSize > MaxUDPSize) {
			return &FieldError{"message-size", strconv.Itoa(cfg.MsgSize), fmt.Sprintf("udp_stream datagrams must be between %d and %d bytes", UDPStreamHeader, MaxUDPSize)}
		}
	default:
		if cfg.MsgSize < 1 || cfg.MsgSize > MaxMsgSize {
			return &FieldError{"message-size", strconv.Itoa(cfg.MsgSize), fmt.Sprintf("must be between 1 and %d bytes", MaxMsgSize)}
		}
	}
	if cfg.HTTPBody < 0 || cfg.HTTPBody > MaxHTTPBody {
		return &FieldError{"http-body", strconv.Itoa(cfg.HTTPBody), fmt.Sprintf("must be between 0 and %d bytes", MaxHTTPBody)}
	}
	if !strings.HasPrefix(cfg.HTTPPath, "/") || strings.ContainsAny(cfg.HTTPPath, " \r\n") {
		return &FieldError{"http-path", quote(cfg.HTTPPath), "must start with / and contain no spaces"}
	}
	if cfg.Rate < 0 {
		return &FieldError{"rate", fmt.Sprint(cfg.Rate), "must be positive (0 = unlimited)"}
	}
	if cfg.Timeout < 10*time.Millisecond {
		return &FieldError{"timeout", cfg.Timeout.String(), "must be at least 10ms"}
	}
	switch {
	case cfg.Test == TCPRRLoaded && (cfg.LoadFlows < 1 || cfg.LoadFlows > MaxFlows):
		return &FieldError{"load-flows", strconv.Itoa(cfg.LoadFlows), fmt.Sprintf("must be between 1 and %d tcp_stream flows loading the path", MaxFlows)}
	case cfg.Test != TCPRRLoaded && cfg.LoadFlows != 0:
		return &FieldError{"load-flows", strconv.Itoa(cfg.LoadFlows), "only tcp_rr_loaded takes --load-flows; drop it or use --test tcp_rr_loaded"}
	case cfg.UDPHandshake && cfg.Test != UDPStream:
		return &FieldError{"udp-handshake", "true", "only udp_stream takes --udp-handshake; drop it or use --test udp_stream"}
	}
	return nil
}

// ValidTest reports whether name is a known test.
func ValidTest(name string) bool {
	for _, t := range Tests {
		if t == name {
			return true
		}
	}
	return false
}

// IsStream reports whether the test measures bulk throughput; it is
// result.IsStream.
func IsStream(test string) bool { return result.IsStream(test) }

// SplitTarget splits host[:port], defaulting the port.
func SplitTarget(t string) (host string, port int, err error) {
	h, p, err := net.SplitHostPort(t)
	if err != nil {
		// No port: the whole string is the host (IPv6 literals may be bracketed).
		h, p = strings.TrimSuffix(strings.TrimPrefix(t, "["), "]"), strconv.Itoa(DefaultPort)
	}
	if h == "" {
		return "", 0, fmt.Errorf("missing host; use HOST or HOST:PORT")
	}
	port, err = strconv.Atoi(p)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("port %q must be a number between 1 and 65535", p)
	}
	return h, port, nil
}

// Map renders the configuration as the key/value pairs of a result.
func (cfg Config) Map() map[string]string {
	m := map[string]string{
		"test":         cfg.Test,
		"target":       cfg.Target,
		"duration":     cfg.Duration.String(),
		"warmup":       cfg.Warmup.String(),
		"repeat":       strconv.Itoa(cfg.Repeat),
		"flows":        strconv.Itoa(cfg.Flows),
		"busy_poll":    strconv.FormatBool(cfg.BusyPoll),
		"timeout":      cfg.Timeout.String(),
		"rate":         strconv.FormatFloat(cfg.Rate, 'g', -1, 64),
		"rate_unit":    RateUnit(cfg.Test),
		"blocking_io":  strconv.FormatBool(!cfg.BusyPoll),
		"socket_model": "one blocking socket per flow on its own OS thread",
	}
	switch cfg.Test {
	case TCPStream:
		m["message_size"] = strconv.Itoa(cfg.MsgSize)
	case UDPStream:
		m["message_size"] = strconv.Itoa(cfg.MsgSize)
		if cfg.MsgSize == 0 {
			m["message_size"] = "path MTU"
		}
		if cfg.UDPHandshake {
			m["udp_handshake"] = UDPHandshakeText
		}
	case UDPRR:
		m["request_size"] = strconv.Itoa(cfg.ReqSize)
		m["response_size"] = strconv.Itoa(cfg.RespSize)
		m["request_size_on_wire"] = strconv.Itoa(UDPRRWireSize(cfg.ReqSize))
	case ICMPEcho:
		m["request_size"] = strconv.Itoa(cfg.ReqSize)
		m["request_size_on_wire"] = strconv.Itoa(ICMPWireSize(cfg.ReqSize))
		m["socket_model"] = "one blocking ICMP datagram socket per flow on its own OS thread; the server's kernel answers"
	case TCPRR, TCPCRR:
		m["request_size"] = strconv.Itoa(cfg.ReqSize)
		m["response_size"] = strconv.Itoa(cfg.RespSize)
	case TCPRRLoaded:
		m["request_size"] = strconv.Itoa(cfg.ReqSize)
		m["response_size"] = strconv.Itoa(cfg.RespSize)
		m["load_flows"] = strconv.Itoa(cfg.LoadFlows)
		m["load_test"] = TCPStream
		m["message_size"] = strconv.Itoa(cfg.MsgSize)
		m["socket_model"] += "; the load is a second session's tcp_stream flows, each a blocking socket on its own OS thread"
	case HTTP:
		if cfg.URL != "" {
			m["url"] = cfg.URL
			delete(m, "target")
		}
		m["http_body"] = strconv.Itoa(cfg.HTTPBody)
		m["http_keepalive"] = strconv.FormatBool(cfg.HTTPKeepAlive)
		m["http_path"] = cfg.HTTPPath
		m["socket_model"] = "one goroutine per client on Go's netpoller"
	}
	if cfg.Service != "" {
		m["service"] = cfg.Service
	}
	return m
}

// RateUnit is the unit of Config.Rate for a test.
func RateUnit(test string) string {
	if IsStream(test) {
		return "bit/s"
	}
	return "trans/s"
}

func quote(s string) string { return strconv.Quote(s) }
