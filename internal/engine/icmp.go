package engine

import "time"

// icmp_echo: each flow sends ICMP echo requests from an unprivileged ICMP
// datagram socket (socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP)) to the
// target; the kernel of the server's namespace answers, so the server runs
// no data plane, only the control session (CPU of both ends, the window).
//
// The kernel sets the ICMP identifier (one per socket) and the checksum;
// the client writes the ICMP type, the low 16 bits of its sequence number
// and the payload:
//
//	cookie u64 LE | seq u64 LE | stamp u64 LE (send time, Unix ns) | flow u16 BE | fill
//
// with fill byte k = byte(k) (k counted from the start of the payload), so
// a reply is matched to its request by the sequence number and the whole
// payload: a corrupted or foreign reply never counts as a transaction.
const (
	icmpOffCookie = 0
	icmpOffSeq    = 8
	icmpOffStamp  = 16
	icmpOffFlow   = 24
	// icmpPayloadHeader is the smallest payload: a smaller --request-size
	// is raised to it (request_size_on_wire).
	icmpPayloadHeader = 26
	// icmpHeader is the ICMP echo header the kernel's socket exchanges.
	icmpHeader = 8
	// icmpDefaultPayload is ping's default payload size.
	icmpDefaultPayload = 56
	// MaxICMPPayload is the largest ICMP echo payload over IPv4.
	MaxICMPPayload = 65535 - ipv4Header - icmpHeader

	icmpEchoRequest4 = 8
	icmpEchoReply4   = 0
	icmpEchoRequest6 = 128
	icmpEchoReply6   = 129

	// icmpResend: without --rate a flow sends its next request when the
	// reply arrives or after this long without one, as `ping -f` does.
	icmpResend = 10 * time.Millisecond
)

// icmpWireSize is the ICMP payload actually sent for a --request-size.
func icmpWireSize(reqSize int) int { return max(reqSize, icmpPayloadHeader) }
