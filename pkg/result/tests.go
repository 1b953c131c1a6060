package result

// Test names: the workloads cnibench runs, as in netperf where one exists.
// A Result labels its test with one of them (the "test" key of Config, and
// of a Set's run labels), so producers and readers of documents share this
// one vocabulary.
const (
	TestTCPStream = "tcp_stream"
	TestTCPRR     = "tcp_rr"
	TestTCPCRR    = "tcp_crr"
	TestUDPStream = "udp_stream"
	TestUDPRR     = "udp_rr"
	TestHTTP      = "http"
	TestICMPEcho  = "icmp_echo"
	// TestTCPRRLoaded is the loaded-latency test: tcp_rr's latency measured
	// while tcp_stream flows load the same path (the bufferbloat question).
	TestTCPRRLoaded = "tcp_rr_loaded"
)

// Tests lists every test name.
var Tests = []string{TestTCPStream, TestTCPRR, TestTCPCRR, TestUDPStream, TestUDPRR, TestHTTP, TestICMPEcho, TestTCPRRLoaded}

// IsStream reports whether test is a bulk-transfer test: its primary metric
// is throughput rather than a transaction rate.
func IsStream(test string) bool { return test == TestTCPStream || test == TestUDPStream }
