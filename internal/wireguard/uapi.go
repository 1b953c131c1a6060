package wireguard

import (
	"fmt"
	"strings"
	"time"
)

// UAPI renders c as a wireguard-go configuration ("set" operation of the
// cross-platform UAPI, https://www.wireguard.com/xplatform/): hex keys, the
// peer replaced as a whole. It does not validate c.
func (c Config) UAPI() string {
	var b strings.Builder
	fmt.Fprintf(&b, "private_key=%s\n", c.PrivateKey.hex())
	fmt.Fprintf(&b, "listen_port=%d\n", c.ListenPort)
	b.WriteString("replace_peers=true\n")
	fmt.Fprintf(&b, "public_key=%s\n", c.PeerPublicKey.hex())
	if c.PeerEndpoint.IsValid() {
		fmt.Fprintf(&b, "endpoint=%s\n", c.PeerEndpoint)
	}
	if c.PersistentKeepalive > 0 {
		fmt.Fprintf(&b, "persistent_keepalive_interval=%d\n", c.PersistentKeepalive/time.Second)
	}
	b.WriteString("replace_allowed_ips=true\n")
	for _, p := range c.AllowedIPs {
		fmt.Fprintf(&b, "allowed_ip=%s\n", p)
	}
	return b.String()
}
