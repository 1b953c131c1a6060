package netkit

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name           string
		host, peer     string
		fd, mtu        int
		wantErrContain string
	}{
		{name: "ok", host: "cnbh1", peer: "eth0", fd: 3, mtu: 1500},
		{name: "ok default mtu", host: "cnbh1", peer: "eth0", fd: 0, mtu: 0},
		{name: "ok max name", host: "abcdefghijklmno", peer: "eth0", fd: 3, mtu: 65535},
		{name: "empty host", host: "", peer: "eth0", fd: 3, wantErrContain: "host name is empty"},
		{name: "empty peer", host: "cnbh1", peer: "", fd: 3, wantErrContain: "peer name is empty"},
		{name: "long host", host: "abcdefghijklmnop", peer: "eth0", fd: 3, wantErrContain: "longer than 15"},
		{name: "slash", host: "a/b", peer: "eth0", fd: 3, wantErrContain: "contains"},
		{name: "space", host: "cnbh1", peer: "eth 0", fd: 3, wantErrContain: "contains"},
		{name: "colon", host: "cnbh1:1", peer: "eth0", fd: 3, wantErrContain: "contains"},
		{name: "dot", host: ".", peer: "eth0", fd: 3, wantErrContain: "reserved"},
		{name: "dotdot", host: "cnbh1", peer: "..", fd: 3, wantErrContain: "reserved"},
		{name: "bad fd", host: "cnbh1", peer: "eth0", fd: -1, wantErrContain: "namespace fd"},
		{name: "mtu low", host: "cnbh1", peer: "eth0", fd: 3, mtu: 67, wantErrContain: "MTU 67"},
		{name: "mtu high", host: "cnbh1", peer: "eth0", fd: 3, mtu: 65536, wantErrContain: "MTU 65536"},
		{name: "mtu negative", host: "cnbh1", peer: "eth0", fd: 3, mtu: -1, wantErrContain: "MTU -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := validate(tc.host, tc.peer, tc.fd, tc.mtu)
			if tc.wantErrContain == "" {
				if err != nil {
					t.Fatalf("validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErrContain) {
				t.Fatalf("validate() = %v, want error containing %q", err, tc.wantErrContain)
			}
		})
	}
}
