package window

import "github.com/cnibench/cnibench/pkg/result"

// icmpMetrics: icmp_echo's requests sent in the window, those that got no
// reply within --timeout (lost), replies that came after it (late) and
// messages that were no reply of this flow (mismatched). Lost requests are
// counted when their timeout expires, so a request sent just before the
// window closes and lost is counted in the window where it expired.
func icmpMetrics(o *Out, in In) {
	m := o.Metrics
	d0, d1 := in.E0.Cnt, in.E1.Cnt
	m[result.EchoRequestsSent] = float64(d1.Sent - d0.Sent)
	m[result.EchoRequestsLost] = float64(d1.Lost - d0.Lost)
	m[result.EchoRepliesLate] = float64(d1.Late - d0.Late)
	mis := d1.Mismatched - d0.Mismatched
	m[result.EchoRepliesMismatched] = float64(mis)
	if mis > 0 {
		o.warn("icmp_echo read %d message(s) that were no intact echo reply of this session (echo_replies_mismatched)", mis)
	}
}
