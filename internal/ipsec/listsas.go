package ipsec

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// IKESA is one IKE_SA in `swanctl --list-sas` output.
type IKESA struct {
	Name    string
	ID      uint64 // unique id (#N)
	State   string // e.g. ESTABLISHED, CONNECTING
	Version int    // IKE version
	// LocalHost and RemoteHost are the endpoints as printed:
	// "198.18.211.1[4500]".
	LocalHost, RemoteHost string
	Children              []ChildSA
}

// ChildSA is one CHILD_SA of an IKESA.
type ChildSA struct {
	Name  string
	ID    uint64 // unique id (#N)
	ReqID uint64
	State string // e.g. INSTALLED, REKEYING
	Mode  string // e.g. TUNNEL
	// Encap is true for ESP in UDP ("TUNNEL-in-UDP"): always the case
	// with kernel-libipsec.
	Encap bool
	// Protocol is ESP or AH; Algorithms as strongSwan names them, e.g.
	// "AES_GCM_16-128" or "AES_CBC-128/HMAC_SHA2_256_128".
	Protocol, Algorithms string
	// SPIIn and SPIOut are the SPIs in hex, as printed.
	SPIIn, SPIOut                            string
	BytesIn, PacketsIn, BytesOut, PacketsOut uint64
	LocalTS, RemoteTS                        []string
}

// Installed reports whether the CHILD_SA carries traffic.
func (c ChildSA) Installed() bool { return c.State == "INSTALLED" }

// FindChild returns the CHILD_SA named child of the IKE_SA named ike that
// is installed, or the first one of that name if none is, and whether
// there was one.
func FindChild(sas []IKESA, ike, child string) (ChildSA, bool) {
	var first *ChildSA
	for i := range sas {
		if sas[i].Name != ike {
			continue
		}
		for j := range sas[i].Children {
			c := &sas[i].Children[j]
			if c.Name != child {
				continue
			}
			if c.Installed() {
				return *c, true
			}
			if first == nil {
				first = c
			}
		}
	}
	if first == nil {
		return ChildSA{}, false
	}
	return *first, true
}

// ParseListSAs parses the default (not --raw) output of `swanctl
// --list-sas` (strongSwan 5.9's src/swanctl/commands/list_sas.c): an IKE_SA
// header at column 0, its details indented by 2, each CHILD_SA header
// indented by 2 and its details by 4. Lines it does not need are skipped;
// a header it cannot read is an error, so a changed format is noticed
// rather than read as "no SA". Values swanctl prints as "(null)" (absent)
// read as zero.
func ParseListSAs(out []byte) ([]IKESA, error) {
	var sas []IKESA
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), " \t\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		text := line[indent:]
		var err error
		switch {
		case indent == 0:
			var sa IKESA
			sa, err = parseIKEHeader(text)
			sas = append(sas, sa)
		case len(sas) == 0:
			err = fmt.Errorf("indented line before any IKE_SA")
		case indent == 2:
			err = parseIKELine(&sas[len(sas)-1], text)
		case indent >= 4:
			ike := &sas[len(sas)-1]
			if len(ike.Children) > 0 {
				err = parseChildLine(&ike.Children[len(ike.Children)-1], text)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("swanctl --list-sas line %d %q: %w", n, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read swanctl --list-sas output: %w", err)
	}
	return sas, nil
}

// parseIKEHeader reads "name: #1, ESTABLISHED, IKEv2, 47b5b2e4d1898b77_i* 0a99709b34f7353d_r".
func parseIKEHeader(s string) (IKESA, error) {
	name, rest, ok := strings.Cut(s, ": #")
	if !ok || name == "" {
		return IKESA{}, fmt.Errorf("not an IKE_SA header")
	}
	f := strings.SplitN(rest, ", ", 4)
	if len(f) < 3 || !strings.HasPrefix(f[2], "IKEv") {
		return IKESA{}, fmt.Errorf("IKE_SA header without id, state and version")
	}
	sa := IKESA{Name: name, State: f[1]}
	var err error
	if sa.ID, err = num(f[0]); err != nil {
		return IKESA{}, fmt.Errorf("IKE_SA id: %w", err)
	}
	v, err := num(strings.TrimPrefix(f[2], "IKEv"))
	if err != nil || v > 2 {
		return IKESA{}, fmt.Errorf("IKE version %q", f[2])
	}
	sa.Version = int(v)
	return sa, nil
}

// parseIKELine reads a line indented by 2: a CHILD_SA header or one of the
// IKE_SA's details.
func parseIKELine(sa *IKESA, s string) error {
	switch {
	case strings.Contains(s, ": #") && strings.Contains(s, ", reqid "):
		c, err := parseChildHeader(s)
		if err != nil {
			return err
		}
		sa.Children = append(sa.Children, c)
	case strings.HasPrefix(s, "local  '"):
		sa.LocalHost = hostOf(s)
	case strings.HasPrefix(s, "remote '"):
		sa.RemoteHost = hostOf(s)
	}
	return nil
}

// hostOf returns the "host[port]" after " @ " in "local  'id' @ host[port] [vips]".
func hostOf(s string) string {
	i := strings.LastIndex(s, "' @ ")
	if i < 0 {
		return ""
	}
	h, _, _ := strings.Cut(s[i+len("' @ "):], " ")
	return h
}

// parseChildHeader reads "pods: #1, reqid 1, INSTALLED, TUNNEL-in-UDP, ESP:AES_GCM_16-128".
func parseChildHeader(s string) (ChildSA, error) {
	name, rest, _ := strings.Cut(s, ": #")
	f := strings.SplitN(rest, ", ", 5)
	if name == "" || len(f) < 5 || !strings.HasPrefix(f[1], "reqid ") {
		return ChildSA{}, fmt.Errorf("CHILD_SA header without name, id, reqid, state, mode and protocol")
	}
	c := ChildSA{Name: name, State: f[2]}
	var err error
	if c.ID, err = num(f[0]); err != nil {
		return ChildSA{}, fmt.Errorf("CHILD_SA id: %w", err)
	}
	if c.ReqID, err = num(strings.TrimPrefix(f[1], "reqid ")); err != nil {
		return ChildSA{}, fmt.Errorf("CHILD_SA reqid: %w", err)
	}
	c.Mode, c.Encap = strings.CutSuffix(f[3], "-in-UDP")
	c.Protocol, c.Algorithms, _ = strings.Cut(f[4], ":")
	return c, nil
}

// parseChildLine reads a CHILD_SA detail line (indented by 4).
func parseChildLine(c *ChildSA, s string) error {
	var err error
	switch {
	case strings.HasPrefix(s, "in  "):
		c.SPIIn, c.BytesIn, c.PacketsIn, err = parseTraffic(s[len("in  "):])
	case strings.HasPrefix(s, "out "):
		c.SPIOut, c.BytesOut, c.PacketsOut, err = parseTraffic(s[len("out "):])
	case strings.HasPrefix(s, "local  "):
		c.LocalTS = strings.Fields(s[len("local  "):])
	case strings.HasPrefix(s, "remote "):
		c.RemoteTS = strings.Fields(s[len("remote "):])
	}
	return err
}

// parseTraffic reads "c1d5e6b0 (0x1/0xff),   1234 bytes,    10 packets,     0s ago":
// the SPI (with an optional /CPI), an optional mark, then the counters.
func parseTraffic(s string) (spi string, bytesN, packets uint64, err error) {
	f := strings.Split(s, ",")
	spi, _, _ = strings.Cut(strings.TrimSpace(f[0]), " ")
	for _, field := range f[1:] {
		v, unit, _ := strings.Cut(strings.TrimSpace(field), " ")
		var dst *uint64
		switch unit {
		case "bytes":
			dst = &bytesN
		case "packets":
			dst = &packets
		default:
			continue
		}
		if *dst, err = num(v); err != nil {
			return "", 0, 0, fmt.Errorf("%s counter: %w", unit, err)
		}
	}
	return spi, bytesN, packets, nil
}

// num parses a decimal counter; swanctl prints "(null)" for an absent one.
func num(s string) (uint64, error) {
	if s == "(null)" {
		return 0, nil
	}
	return strconv.ParseUint(s, 10, 64)
}
