package hoststat

import (
	"strings"
	"testing"
)

const snmpSample = `Ip: Forwarding DefaultTTL InReceives InHdrErrors InAddrErrors ForwDatagrams InUnknownProtos InDiscards InDelivers OutRequests OutDiscards OutNoRoutes ReasmTimeout ReasmReqds ReasmOKs ReasmFails FragOKs FragFails FragCreates OutTransmits
Ip: 1 64 100 0 0 0 0 0 100 90 0 0 0 30 10 1 4 0 12 90
Icmp: InMsgs InErrors
Icmp: 0 0
`

func TestParseSNMP(t *testing.T) {
	f, err := ParseSNMP(strings.NewReader(snmpSample))
	if err != nil {
		t.Fatal(err)
	}
	want := IPFrag{FragCreates: 12, FragOKs: 4, ReasmReqds: 30, ReasmOKs: 10, ReasmFails: 1}
	if f != want {
		t.Fatalf("got %+v, want %+v", f, want)
	}
	for _, bad := range []string{"", "Ip: A B\nIp: 1\n", "Ip: ReasmReqds\nIp: 1\n", "Ip: FragCreates FragOKs ReasmReqds ReasmOKs ReasmFails\nIp: 1 2 x 4 5\n"} {
		if _, err := ParseSNMP(strings.NewReader(bad)); err == nil {
			t.Errorf("no error for %q", bad)
		}
	}
	f6, err := ParseSNMP6(strings.NewReader("Ip6InReceives 5\nIp6ReasmReqds 3\nIp6ReasmOKs 1\nIp6ReasmFails 0\nIp6FragOKs 2\nIp6FragFails 0\nIp6FragCreates 6\n"))
	if err != nil || f6 != (IPFrag{FragCreates: 6, FragOKs: 2, ReasmReqds: 3, ReasmOKs: 1}) {
		t.Fatalf("snmp6: %+v %v", f6, err)
	}
	if d := want.Sub(IPFrag{FragCreates: 20}); d.FragCreates != 0 || d.ReasmReqds != 30 {
		t.Fatalf("Sub: %+v", d)
	}
}

func TestReadIPFragAndBootID(t *testing.T) {
	if _, err := ReadIPFrag(); err != nil {
		t.Fatal(err)
	}
	if ReadBootID() == "" {
		t.Fatal("no boot id")
	}
}

func FuzzParseSNMP(f *testing.F) {
	f.Add(snmpSample)
	f.Add("Ip6FragCreates 1\n")
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = ParseSNMP(strings.NewReader(s))
		_, _ = ParseSNMP6(strings.NewReader(s))
	})
}
