package wireguard

import (
	"bytes"
	"encoding/hex"
	"testing"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

func TestGenerateKeyPair(t *testing.T) {
	priv, pub, err := GenerateKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	if priv[0]&7 != 0 || priv[31]&128 != 0 || priv[31]&64 == 0 {
		t.Errorf("private key %x is not clamped", priv)
	}
	// The public key is the one wgctrl (and so wg(8)) derives.
	if want := wgtypes.Key(priv).PublicKey(); pub != Key(want) {
		t.Errorf("public key %s, wgtypes derives %s", pub, want)
	}
	again, err := priv.PublicKey()
	if err != nil || again != pub {
		t.Errorf("PublicKey() = %s, %v; want %s", again, err, pub)
	}
	priv2, _, err := GenerateKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	if priv2 == priv {
		t.Error("two key pairs share a private key")
	}
}

// RFC 7748 section 6.1: Alice's key pair. X25519 clamps the scalar, so
// clamping first changes nothing in the public key.
func TestPublicKeyRFC7748(t *testing.T) {
	seed, _ := hex.DecodeString("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")
	want, _ := hex.DecodeString("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a")
	priv, pub, err := generateKeyPair(bytes.NewReader(seed))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(pub[:], want) {
		t.Fatalf("public key %x, want %x", pub, want)
	}
	if priv[0] != 0x70 || priv[31] != 0x6a {
		t.Errorf("private key %x: not clamped like wgtypes (first byte 0x70, last 0x6a)", priv)
	}
}

func TestParseKey(t *testing.T) {
	priv, _, err := GenerateKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseKey(priv.String())
	if err != nil || got != priv {
		t.Fatalf("ParseKey(String()) = %s, %v; want %s", got, err, priv)
	}
	if w, err := wgtypes.ParseKey(priv.String()); err != nil || Key(w) != priv {
		t.Errorf("wgtypes reads %s as %s, %v", priv, w, err)
	}
	var k Key
	if err := k.UnmarshalText([]byte(priv.String())); err != nil || k != priv {
		t.Errorf("UnmarshalText: %s, %v", k, err)
	}
	for _, bad := range []string{"", "not base64!", "AAAA", priv.String() + "AAAA"} {
		if _, err := ParseKey(bad); err == nil {
			t.Errorf("ParseKey(%q) accepted", bad)
		}
	}
}
