package wireguard

import (
	"net"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// wgtypesConfig translates c into what wgctrl's ConfigureDevice takes for a
// kernel device: the same settings as UAPI, the peer replaced as a whole.
func (c Config) wgtypesConfig() wgtypes.Config {
	priv := wgtypes.Key(c.PrivateKey)
	port := c.ListenPort
	peer := wgtypes.PeerConfig{
		PublicKey:         wgtypes.Key(c.PeerPublicKey),
		ReplaceAllowedIPs: true,
	}
	if c.PeerEndpoint.IsValid() {
		peer.Endpoint = net.UDPAddrFromAddrPort(c.PeerEndpoint)
	}
	if c.PersistentKeepalive > 0 {
		ka := c.PersistentKeepalive.Truncate(time.Second)
		peer.PersistentKeepaliveInterval = &ka
	}
	for _, p := range c.AllowedIPs {
		peer.AllowedIPs = append(peer.AllowedIPs, net.IPNet{
			IP:   net.IP(p.Addr().AsSlice()),
			Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen()),
		})
	}
	return wgtypes.Config{
		PrivateKey:   &priv,
		ListenPort:   &port,
		ReplacePeers: true,
		Peers:        []wgtypes.PeerConfig{peer},
	}
}
