package hostinfo

import (
	"bufio"
	"io"
	"strconv"
	"strings"
)

// CryptoAlgorithms are the kernel algorithms recorded in the host facts:
// what kernel IPsec and WireGuard would use.
var CryptoAlgorithms = []string{"gcm(aes)", "rfc4106(gcm(aes))", "cbc(aes)", "hmac(sha256)", "rfc7539esp(chacha20,poly1305)", "chacha20"}

// ParseCrypto reads /proc/crypto and returns, for each of algs, the driver
// with the highest priority, or "absent".
func ParseCrypto(r io.Reader, algs []string) map[string]string {
	type entry struct {
		driver string
		prio   int
	}
	best := map[string]entry{}
	var name, driver string
	prio := -1
	flush := func() {
		if name != "" && driver != "" {
			if b, ok := best[name]; !ok || prio > b.prio {
				best[name] = entry{driver, prio}
			}
		}
		name, driver, prio = "", "", -1
	}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "name":
			name = strings.TrimSpace(v)
		case "driver":
			driver = strings.TrimSpace(v)
		case "priority":
			if p, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				prio = p
			}
		}
	}
	flush()
	out := make(map[string]string, len(algs))
	for _, a := range algs {
		if b, ok := best[a]; ok {
			out[a] = b.driver
		} else {
			out[a] = "absent"
		}
	}
	return out
}

// HasCPUFlag reports whether the first "flags" line of a /proc/cpuinfo
// listing has flag.
func HasCPUFlag(r io.Reader, flag string) bool {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "flags" {
			for _, f := range strings.Fields(v) {
				if f == flag {
					return true
				}
			}
			return false
		}
	}
	return false
}
