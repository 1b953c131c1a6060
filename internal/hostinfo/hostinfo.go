// Package hostinfo collects facts about the machine for result documents.
package hostinfo

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/pkg/result"
)

// Collect returns the host facts; fields that cannot be read stay empty.
func Collect() result.Host {
	h := result.Host{Cores: runtime.NumCPU(), OS: runtime.GOOS}
	h.Hostname, _ = os.Hostname()
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		h.CPUModel = ParseCPUModel(bytes.NewReader(b))
		h.AESNI = HasCPUFlag(bytes.NewReader(b), "aes")
	}
	if f, err := os.Open("/proc/crypto"); err == nil {
		h.KernelCrypto = ParseCrypto(f, CryptoAlgorithms)
		f.Close()
	}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) >= 2 && fs[0] == "MemTotal:" {
				if kb, err := strconv.ParseUint(fs[1], 10, 64); err == nil {
					h.MemBytes = kb * 1024
				}
			}
		}
		f.Close()
	}
	return h
}

// ParseCPUModel returns the first "model name" of a /proc/cpuinfo listing.
func ParseCPUModel(f interface{ Read([]byte) (int, error) }) string {
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
