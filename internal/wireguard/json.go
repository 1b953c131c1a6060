package wireguard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"
)

// MaxConfigJSON bounds the JSON a Config is read from.
const MaxConfigJSON = 64 << 10

// configJSON is Config as `cnibench wg-node` reads it on stdin: keys in
// base64 as wg(8) prints them, addresses and prefixes as text, the
// keepalive in seconds. Every field but the keys, iface and allowed_ips is
// optional.
type configJSON struct {
	Iface               string   `json:"iface"`
	PrivateKey          string   `json:"private_key"`
	PeerPublicKey       string   `json:"peer_public_key"`
	ListenPort          int      `json:"listen_port,omitempty"`
	PeerEndpoint        string   `json:"peer_endpoint,omitempty"`
	AllowedIPs          []string `json:"allowed_ips"`
	Address             string   `json:"address,omitempty"`
	MTU                 int      `json:"mtu,omitempty"`
	PersistentKeepalive int      `json:"persistent_keepalive,omitempty"`
}

// EncodeConfig writes c as the JSON DecodeConfig reads (it holds the
// private key: hand it over a pipe, never on a command line or in a file
// others can read).
func EncodeConfig(c Config) ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("wireguard config: %w", err)
	}
	j := configJSON{
		Iface:               c.Iface,
		PrivateKey:          c.PrivateKey.String(),
		PeerPublicKey:       c.PeerPublicKey.String(),
		ListenPort:          c.ListenPort,
		MTU:                 c.MTU,
		PersistentKeepalive: int(c.PersistentKeepalive / time.Second),
	}
	if c.PeerEndpoint.IsValid() {
		j.PeerEndpoint = c.PeerEndpoint.String()
	}
	if c.Address.IsValid() {
		j.Address = c.Address.String()
	}
	for _, p := range c.AllowedIPs {
		j.AllowedIPs = append(j.AllowedIPs, p.String())
	}
	return json.Marshal(j)
}

// DecodeConfig reads one JSON object (at most MaxConfigJSON bytes) and
// returns the valid Config it describes. Errors are one line and name the
// field at fault, e.g. `private_key: not base64: …`.
func DecodeConfig(r io.Reader) (Config, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxConfigJSON+1))
	if err != nil {
		return Config{}, fmt.Errorf("read: %w", err)
	}
	if len(data) > MaxConfigJSON {
		return Config{}, fmt.Errorf("longer than %d bytes", MaxConfigJSON)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return Config{}, errors.New("empty: want a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var j configJSON
	if err := dec.Decode(&j); err != nil {
		return Config{}, jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Config{}, errors.New("more data after the JSON object")
	}
	return j.config()
}

func (j configJSON) config() (Config, error) {
	c := Config{Iface: j.Iface, ListenPort: j.ListenPort, MTU: j.MTU}
	if err := validIfaceName(c.Iface); err != nil {
		return Config{}, fmt.Errorf("iface: %w", err) // checked first, as Validate does
	}
	var err error
	if c.PrivateKey, err = parseKeyField("private_key", j.PrivateKey); err != nil {
		return Config{}, err
	}
	if c.PeerPublicKey, err = parseKeyField("peer_public_key", j.PeerPublicKey); err != nil {
		return Config{}, err
	}
	if j.PeerEndpoint != "" {
		if c.PeerEndpoint, err = netip.ParseAddrPort(j.PeerEndpoint); err != nil {
			return Config{}, fmt.Errorf("peer_endpoint: %q is not ADDRESS:PORT", j.PeerEndpoint)
		}
	}
	for i, s := range j.AllowedIPs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return Config{}, fmt.Errorf("allowed_ips[%d]: %q is not a prefix (ADDRESS/BITS)", i, s)
		}
		c.AllowedIPs = append(c.AllowedIPs, p)
	}
	if j.Address != "" {
		if c.Address, err = netip.ParsePrefix(j.Address); err != nil {
			return Config{}, fmt.Errorf("address: %q is not ADDRESS/BITS", j.Address)
		}
	}
	if j.PersistentKeepalive < 0 || j.PersistentKeepalive > 65535 {
		return Config{}, fmt.Errorf("persistent_keepalive: %d is not between 0 and 65535 seconds", j.PersistentKeepalive)
	}
	c.PersistentKeepalive = time.Duration(j.PersistentKeepalive) * time.Second
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

func parseKeyField(field, s string) (Key, error) {
	if s == "" {
		return Key{}, fmt.Errorf("%s: missing", field)
	}
	k, err := ParseKey(s)
	if err != nil {
		return Key{}, fmt.Errorf("%s: %w", field, err)
	}
	return k, nil
}

// jsonError turns encoding/json's errors into one line naming the field.
func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			return fmt.Errorf("want a JSON object, got %s", te.Value)
		}
		return fmt.Errorf("%s: want %s, got %s", field, jsonType(te.Type.Kind().String()), te.Value)
	case errors.As(err, &se):
		return fmt.Errorf("invalid JSON at byte %d: %s", se.Offset, oneLine(se.Error()))
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return errors.New("invalid JSON: unexpected end of input")
	}
	msg := strings.TrimPrefix(oneLine(err.Error()), "json: ")
	return errors.New(msg) // e.g. `unknown field "foo"`
}

func jsonType(kind string) string {
	switch kind {
	case "int", "int64", "uint16":
		return "an integer"
	case "slice":
		return "an array of strings"
	case "string":
		return "a string"
	}
	return kind
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
