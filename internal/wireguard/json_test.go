package wireguard

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

func TestConfigJSONRoundTrip(t *testing.T) {
	cfg := testConfig(t)
	b, err := EncodeConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"private_key":"qBTxwXC2fDLGLjkkbr0s5TDfTHaQCoqIlq2JE6PwJ1k="`)) {
		t.Errorf("keys are not base64 as wg prints them: %s", b)
	}
	got, err := DecodeConfig(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, cfg) {
		t.Errorf("round trip:\n%+v\nwant\n%+v", got, cfg)
	}
	if _, err := EncodeConfig(Config{}); err == nil {
		t.Error("EncodeConfig accepted an empty config")
	}
}

// validJSON is a minimal valid config; bad inputs below change one field.
const validJSON = `{"iface":"wg0","private_key":"qBTxwXC2fDLGLjkkbr0s5TDfTHaQCoqIlq2JE6PwJ1k=",` +
	`"peer_public_key":"Xu9QGRWz8MWRXzlXz7RbLNgUVumNJFWJCBaK7Vm0AlY=","allowed_ips":["198.19.2.0/24"]}`

func TestDecodeConfigErrors(t *testing.T) {
	if _, err := DecodeConfig(strings.NewReader(validJSON)); err != nil {
		t.Fatalf("valid minimal config: %v", err)
	}
	with := func(old, new string) string { return strings.Replace(validJSON, old, new, 1) }
	cases := []struct{ in, want string }{
		{"", "empty"},
		{"  \n", "empty"},
		{"[]", "want a JSON object"},
		{`{"iface":`, "invalid JSON"},
		{`{"iface" "wg0"}`, "invalid JSON at byte"},
		{validJSON + `{}`, "more data after the JSON object"},
		{with(`"iface":"wg0"`, `"iface":7`), "iface: want a string, got number"},
		{with(`"iface":"wg0"`, `"iface":""`), "iface: missing"},
		{with(`"iface":"wg0"`, `"iface":"a-very-long-interface"`), "iface: "},
		{with(`"iface":"wg0"`, `"iface":"wg0","colour":"red"`), `unknown field "colour"`},
		{with(`"private_key":"qBTxwXC2fDLGLjkkbr0s5TDfTHaQCoqIlq2JE6PwJ1k=",`, ``), "private_key: missing"},
		{with(`qBTxwXC2fDLGLjkkbr0s5TDfTHaQCoqIlq2JE6PwJ1k=`, `not-a-key`), "private_key: not base64"},
		{with(`qBTxwXC2fDLGLjkkbr0s5TDfTHaQCoqIlq2JE6PwJ1k=`, `AAAA`), "private_key: 3 bytes, want 32"},
		{with(`Xu9QGRWz8MWRXzlXz7RbLNgUVumNJFWJCBaK7Vm0AlY=`, `AAAA`), "peer_public_key: 3 bytes"},
		{with(`"iface":"wg0"`, `"iface":"wg0","listen_port":"51820"`), "listen_port: want an integer, got string"},
		{with(`"iface":"wg0"`, `"iface":"wg0","listen_port":1.5`), "listen_port: want an integer"},
		{with(`"iface":"wg0"`, `"iface":"wg0","listen_port":-1`), "listen_port: -1"},
		{with(`"iface":"wg0"`, `"iface":"wg0","peer_endpoint":"198.18.0.2"`), `peer_endpoint: "198.18.0.2" is not ADDRESS:PORT`},
		{with(`"iface":"wg0"`, `"iface":"wg0","peer_endpoint":"198.18.0.2:0"`), `peer_endpoint: `},
		{with(`["198.19.2.0/24"]`, `[]`), "allowed_ips: missing"},
		{with(`["198.19.2.0/24"]`, `"198.19.2.0/24"`), "allowed_ips: want an array of strings, got string"},
		{with(`["198.19.2.0/24"]`, `["198.19.2.0/24","x"]`), `allowed_ips[1]: "x" is not a prefix`},
		{with(`["198.19.2.0/24"]`, `["198.19.2.1/24"]`), "allowed_ips[0]: 198.19.2.1/24 has host bits set"},
		{with(`"iface":"wg0"`, `"iface":"wg0","address":"10.200.0.1"`), `address: "10.200.0.1" is not ADDRESS/BITS`},
		{with(`"iface":"wg0"`, `"iface":"wg0","mtu":20`), "mtu: 20"},
		{with(`"iface":"wg0"`, `"iface":"wg0","persistent_keepalive":-5`), "persistent_keepalive: -5"},
		{strings.Repeat(" ", MaxConfigJSON) + validJSON, "longer than"},
	}
	for _, c := range cases {
		_, err := DecodeConfig(strings.NewReader(c.in))
		if err == nil {
			t.Errorf("DecodeConfig(%.60q) accepted", c.in)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, c.want) || strings.ContainsAny(msg, "\n\r") {
			t.Errorf("DecodeConfig(%.60q) = %q, want one line containing %q", c.in, msg, c.want)
		}
	}
}

// FuzzDecodeConfig: DecodeConfig never panics, its errors are one line, and
// whatever it accepts is valid and survives EncodeConfig unchanged.
func FuzzDecodeConfig(f *testing.F) {
	f.Add(validJSON)
	f.Add(`{"iface":"wg0","private_key":"qBTxwXC2fDLGLjkkbr0s5TDfTHaQCoqIlq2JE6PwJ1k=","peer_public_key":"Xu9QGRWz8MWRXzlXz7RbLNgUVumNJFWJCBaK7Vm0AlY=",` +
		`"listen_port":51820,"peer_endpoint":"[2001:db8::2]:51820","allowed_ips":["198.19.2.0/24","10.200.0.2/32"],"address":"10.200.0.1/24","mtu":1440,"persistent_keepalive":25}`)
	f.Add(`{"iface":1}`)
	f.Add(`{"allowed_ips":[null]}`)
	f.Add(`nul`)
	f.Fuzz(func(t *testing.T, in string) {
		cfg, err := DecodeConfig(strings.NewReader(in))
		if err != nil {
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("error is not one line: %q", err)
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("accepted an invalid config: %v", err)
		}
		b, err := EncodeConfig(cfg)
		if err != nil {
			t.Fatalf("cannot encode an accepted config: %v", err)
		}
		again, err := DecodeConfig(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("cannot decode its own encoding %s: %v", b, err)
		}
		if !reflect.DeepEqual(again, cfg) {
			t.Fatalf("round trip changed the config:\n%+v\n%+v", cfg, again)
		}
	})
}
