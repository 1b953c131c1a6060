package engine

// icmp_echo: each flow sends ICMP echo requests from an unprivileged ICMP
// datagram socket to the target; the kernel of the server's namespace
// answers, so the server runs no data plane, only the control session. The
// payload's layout is the client's (engine/client, icmp_linux.go); its
// sizes are part of the configuration.
const (
	// ICMPPayloadHeader is the smallest payload: a smaller --request-size
	// is raised to it (request_size_on_wire).
	ICMPPayloadHeader = 26
	// ICMPHeader is the ICMP echo header the kernel's socket exchanges.
	ICMPHeader = 8
	// icmpDefaultPayload is ping's default payload size.
	icmpDefaultPayload = 56
	// MaxICMPPayload is the largest ICMP echo payload over IPv4.
	MaxICMPPayload = 65535 - ipv4Header - ICMPHeader
)

// ICMPWireSize is the ICMP payload actually sent for a --request-size.
func ICMPWireSize(reqSize int) int { return max(reqSize, ICMPPayloadHeader) }
