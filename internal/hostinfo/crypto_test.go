package hostinfo

import (
	"strings"
	"testing"
)

const procCrypto = `name         : cbc(aes)
driver       : cbc(ecb(aes-fixed-time))
module       : kernel
priority     : 101

name         : cbc(aes)
driver       : cbc-aes-aesni
module       : kernel
priority     : 400

name         : hmac(sha256)
driver       : hmac-sha256-lib
priority     : 300
`

func TestParseCrypto(t *testing.T) {
	got := ParseCrypto(strings.NewReader(procCrypto), []string{"cbc(aes)", "hmac(sha256)", "gcm(aes)"})
	want := map[string]string{"cbc(aes)": "cbc-aes-aesni", "hmac(sha256)": "hmac-sha256-lib", "gcm(aes)": "absent"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
}

func TestHasCPUFlag(t *testing.T) {
	info := "processor\t: 0\nflags\t\t: fpu sse2 aes avx\nprocessor\t: 1\nflags\t\t: fpu\n"
	if !HasCPUFlag(strings.NewReader(info), "aes") || HasCPUFlag(strings.NewReader(info), "sha_ni") {
		t.Error("flags misread")
	}
}

func FuzzParseCrypto(f *testing.F) {
	f.Add(procCrypto)
	f.Fuzz(func(t *testing.T, s string) {
		if m := ParseCrypto(strings.NewReader(s), CryptoAlgorithms); len(m) != len(CryptoAlgorithms) {
			t.Fatalf("%d entries", len(m))
		}
	})
}
