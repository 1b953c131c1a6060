package wireguard

import (
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
)

// KeyLen is the length of a Curve25519 key.
const KeyLen = 32

// Key is a WireGuard Curve25519 key. It is written in base64, as wg(8)
// does, in JSON and by String.
type Key [KeyLen]byte

// GenerateKeyPair returns a new private key (clamped as wgtypes and wg(8)
// clamp it) and its public key. The lab makes a pair per node per run; the
// keys are never written to disk or put on a command line.
func GenerateKeyPair() (private, public Key, err error) {
	return generateKeyPair(rand.Reader)
}

func generateKeyPair(r io.Reader) (private, public Key, err error) {
	if _, err := io.ReadFull(r, private[:]); err != nil {
		return Key{}, Key{}, fmt.Errorf("generate wireguard private key: %w", err)
	}
	private.clamp()
	public, err = private.PublicKey()
	if err != nil {
		return Key{}, Key{}, err
	}
	return private, public, nil
}

// clamp applies Curve25519 scalar clamping (RFC 7748 section 5).
func (k *Key) clamp() {
	k[0] &= 248
	k[31] = (k[31] & 127) | 64
}

// PublicKey returns the public key of private key k.
func (k Key) PublicKey() (Key, error) {
	priv, err := ecdh.X25519().NewPrivateKey(k[:])
	if err != nil {
		return Key{}, fmt.Errorf("wireguard public key: %w", err)
	}
	var pub Key
	copy(pub[:], priv.PublicKey().Bytes())
	return pub, nil
}

// IsZero tells whether k is all zeros (unset).
func (k Key) IsZero() bool { return k == Key{} }

// String returns k in base64.
func (k Key) String() string { return base64.StdEncoding.EncodeToString(k[:]) }

// hex returns k in hex, as the UAPI wants it.
func (k Key) hex() string { return hex.EncodeToString(k[:]) }

// ParseKey parses a base64 key as wg(8) prints it.
func ParseKey(s string) (Key, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return Key{}, fmt.Errorf("not base64: %w", err)
	}
	if len(b) != KeyLen {
		return Key{}, fmt.Errorf("%d bytes, want %d", len(b), KeyLen)
	}
	return Key(b), nil
}

// MarshalText writes k in base64.
func (k Key) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads a base64 key.
func (k *Key) UnmarshalText(b []byte) error {
	v, err := ParseKey(string(b))
	if err != nil {
		return err
	}
	*k = v
	return nil
}
