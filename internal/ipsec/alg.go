package ipsec

import (
	"crypto/rand"
	"fmt"
)

// Algorithm is an ESP transform. Its value names the kernel's crypto
// algorithm(s) (what `ip xfrm state` and /proc/crypto call them).
type Algorithm string

const (
	// AESGCM128 is AES-GCM as ESP uses it (RFC 4106): a 128-bit key plus
	// a 32-bit salt, an 8-byte explicit IV and a 128-bit ICV. The
	// cheapest with AES-NI: one pass for encryption and integrity.
	AESGCM128 Algorithm = "rfc4106(gcm(aes))"
	// AESCBCHMACSHA256 is AES-CBC with a 128-bit key and HMAC-SHA-256
	// truncated to 128 bits (RFC 4868): two passes, a 16-byte IV and
	// padding to the 16-byte AES block. The variant older Cilium
	// releases used.
	AESCBCHMACSHA256 Algorithm = "cbc(aes)+hmac(sha256)"
)

// Algorithms lists the supported algorithms, in a fixed order.
func Algorithms() []Algorithm { return []Algorithm{AESGCM128, AESCBCHMACSHA256} }

// Sizes of ESP tunnel mode over IPv4 (RFC 4303), in bytes.
const (
	outerIPv4Len = 20 // the new outer IPv4 header (no options)
	espHeaderLen = 8  // SPI + sequence number
	espTrailLen  = 2  // pad length + next header
	// UDPEncapOverhead is what ESP in UDP (RFC 3948, port 4500) adds:
	// strongSwan's kernel-libipsec always encapsulates, so the userspace
	// tunnel's packets are 8 bytes longer than kernel ESP's.
	UDPEncapOverhead = 8
)

// params are an algorithm's sizes in bytes.
type params struct {
	encKey  int // cipher key
	salt    int // AEAD salt, appended to the cipher key (RFC 4106 §8.1)
	authKey int // HMAC key (0 for an AEAD)
	iv      int // explicit IV carried in every packet
	block   int // the payload plus trailer is padded to a multiple of this
	icv     int // integrity check value
	// strongSwan's names, for the userspace tunnel.
	espProposal string
	label       string // a short name for result labels
}

func (a Algorithm) params() (params, error) {
	switch a {
	case AESGCM128:
		// GCM is a stream mode: ESP only pads to its 4-byte alignment.
		return params{encKey: 16, salt: 4, iv: 8, block: 4, icv: 16,
			espProposal: "aes128gcm16", label: "aes-gcm-128"}, nil
	case AESCBCHMACSHA256:
		// sha256 in an ESP proposal is HMAC_SHA2_256_128 (RFC 4868).
		return params{encKey: 16, authKey: 32, iv: 16, block: 16, icv: 16,
			espProposal: "aes128-sha256", label: "aes-cbc-128-hmac-sha256"}, nil
	}
	return params{}, fmt.Errorf("unknown ESP algorithm %q (want %q or %q)", string(a), AESGCM128, AESCBCHMACSHA256)
}

// Valid reports whether a is one of Algorithms.
func (a Algorithm) Valid() error {
	_, err := a.params()
	return err
}

// Label is a short name for result labels ("aes-gcm-128",
// "aes-cbc-128-hmac-sha256"); "" for an unknown algorithm.
func (a Algorithm) Label() string {
	p, _ := a.params()
	return p.label
}

// KeyLen is the length of one direction's key material: for AESGCM128 the
// 16-byte AES key followed by the 4-byte salt (20), for AESCBCHMACSHA256
// the 16-byte AES key followed by the 32-byte HMAC key (48). 0 for an
// unknown algorithm.
func KeyLen(alg Algorithm) int {
	p, _ := alg.params()
	return p.encKey + p.salt + p.authKey
}

// NewKeys returns fresh random key material for one direction of alg
// (KeyLen bytes from crypto/rand). Each direction of a tunnel gets its own:
// reusing a GCM key and salt across two SAs risks nonce reuse.
func NewKeys(alg Algorithm) ([]byte, error) {
	if err := alg.Valid(); err != nil {
		return nil, err
	}
	k := make([]byte, KeyLen(alg))
	if _, err := rand.Read(k); err != nil {
		return nil, fmt.Errorf("read random key material: %w", err)
	}
	return k, nil
}

// Overhead is the worst-case number of bytes ESP tunnel mode over IPv4 adds
// to an inner packet with alg: outer IPv4 header (20) + ESP header (8) +
// IV (8 for GCM, 16 for CBC) + padding (at most 3 for GCM, whose payload
// is aligned to 4 bytes, at most 15 for CBC's 16-byte blocks) + pad length
// and next header (2) + ICV (16). That is 57 bytes for AESGCM128 and 77 for
// AESCBCHMACSHA256. An inner packet of wireMTU-Overhead bytes always fits;
// PodMTU gives the exact, slightly larger, limit. 0 for an unknown
// algorithm.
func Overhead(alg Algorithm) int {
	p, err := alg.params()
	if err != nil {
		return 0
	}
	return outerIPv4Len + espHeaderLen + p.iv + (p.block - 1) + espTrailLen + p.icv
}

// ESPLen is the size of the outer IPv4 packet that carries an inner packet
// of inner bytes through an ESP tunnel with alg; 0 for an unknown
// algorithm.
func ESPLen(inner int, alg Algorithm) int {
	p, err := alg.params()
	if err != nil {
		return 0
	}
	padded := (inner + espTrailLen + p.block - 1) / p.block * p.block
	return outerIPv4Len + espHeaderLen + p.iv + padded + p.icv
}

// PodMTU is the largest inner packet whose ESP packet still fits in
// wireMTU: the MTU to give pod interfaces so that nothing is fragmented
// after encryption. With a 1500-byte wire it is 1446 for AESGCM128 and 1438
// for AESCBCHMACSHA256 (TCP MSS 1406 and 1398). For ESP in UDP (the
// userspace tunnel) pass wireMTU-UDPEncapOverhead. 0 for an unknown
// algorithm or a wire too small for any payload.
func PodMTU(wireMTU int, alg Algorithm) int {
	p, err := alg.params()
	if err != nil {
		return 0
	}
	avail := wireMTU - outerIPv4Len - espHeaderLen - p.iv - p.icv
	if avail < p.block {
		return 0
	}
	return avail - avail%p.block - espTrailLen
}
