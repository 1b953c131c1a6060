package ipsec

import (
	"bytes"
	"testing"
)

func TestAlgorithmSizes(t *testing.T) {
	for _, tc := range []struct {
		alg              Algorithm
		keyLen, overhead int
		podMTU1500       int
		label            string
	}{
		// 16-byte key + 4-byte salt; 20+8+8+3+2+16.
		{AESGCM128, 20, 57, 1446, "aes-gcm-128"},
		// 16-byte AES key + 32-byte HMAC key; 20+8+16+15+2+16.
		{AESCBCHMACSHA256, 48, 77, 1438, "aes-cbc-128-hmac-sha256"},
	} {
		t.Run(tc.label, func(t *testing.T) {
			if err := tc.alg.Valid(); err != nil {
				t.Fatal(err)
			}
			if got := tc.alg.Label(); got != tc.label {
				t.Errorf("Label = %q, want %q", got, tc.label)
			}
			if got := KeyLen(tc.alg); got != tc.keyLen {
				t.Errorf("KeyLen = %d, want %d", got, tc.keyLen)
			}
			if got := Overhead(tc.alg); got != tc.overhead {
				t.Errorf("Overhead = %d, want %d", got, tc.overhead)
			}
			if got := PodMTU(1500, tc.alg); got != tc.podMTU1500 {
				t.Errorf("PodMTU(1500) = %d, want %d", got, tc.podMTU1500)
			}
		})
	}
}

// TestPodMTUIsTight checks PodMTU against ESPLen for every wire MTU from
// 60 to 9000: the pod MTU's ESP packet fits, one byte more does not, and
// it is never below wireMTU-Overhead (the worst case).
func TestPodMTUIsTight(t *testing.T) {
	for _, alg := range Algorithms() {
		for wire := 60; wire <= 9000; wire++ {
			pod := PodMTU(wire, alg)
			if pod == 0 {
				if wire-Overhead(alg) > 0 {
					t.Fatalf("%s: PodMTU(%d) = 0 but wire-Overhead = %d", alg, wire, wire-Overhead(alg))
				}
				continue
			}
			if got := ESPLen(pod, alg); got > wire {
				t.Fatalf("%s: PodMTU(%d) = %d, but its ESP packet is %d bytes", alg, wire, pod, got)
			}
			if got := ESPLen(pod+1, alg); got <= wire {
				t.Fatalf("%s: PodMTU(%d) = %d, but %d bytes still fit (ESP packet %d)", alg, wire, pod, pod+1, got)
			}
			if pod < wire-Overhead(alg) {
				t.Fatalf("%s: PodMTU(%d) = %d < wire - worst-case overhead %d", alg, wire, pod, wire-Overhead(alg))
			}
		}
	}
}

func TestESPLenWorstCase(t *testing.T) {
	for _, alg := range Algorithms() {
		worst := 0
		for inner := 1; inner <= 1500; inner++ {
			worst = max(worst, ESPLen(inner, alg)-inner)
		}
		if worst != Overhead(alg) {
			t.Errorf("%s: largest ESPLen-inner = %d, Overhead = %d", alg, worst, Overhead(alg))
		}
	}
}

func TestUnknownAlgorithm(t *testing.T) {
	bad := Algorithm("cbc(des)")
	if bad.Valid() == nil {
		t.Error("Valid accepted an unknown algorithm")
	}
	if KeyLen(bad) != 0 || Overhead(bad) != 0 || PodMTU(1500, bad) != 0 || ESPLen(100, bad) != 0 || bad.Label() != "" {
		t.Error("sizes of an unknown algorithm are not 0")
	}
	if _, err := NewKeys(bad); err == nil {
		t.Error("NewKeys accepted an unknown algorithm")
	}
}

func TestNewKeys(t *testing.T) {
	for _, alg := range Algorithms() {
		a, err := NewKeys(alg)
		if err != nil {
			t.Fatal(err)
		}
		b, err := NewKeys(alg)
		if err != nil {
			t.Fatal(err)
		}
		if len(a) != KeyLen(alg) || len(b) != KeyLen(alg) {
			t.Errorf("%s: keys of %d and %d bytes, want %d", alg, len(a), len(b), KeyLen(alg))
		}
		if bytes.Equal(a, b) {
			t.Errorf("%s: two NewKeys calls returned the same key", alg)
		}
	}
}
