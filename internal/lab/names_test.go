package lab

import (
	"strings"
	"testing"
)

func TestNSNameRoundTrip(t *testing.T) {
	for _, tc := range []struct{ run, dp, role string }{
		{"a1b2c3", "baseline", RoleNode1},
		{"a1b2c3", "veth-routing-notrack", RoleClient1},
		{"x", "ebpf-host-routing", RoleServer},
	} {
		name := NSName(tc.run, tc.dp, tc.role)
		if !strings.HasPrefix(name, Prefix) {
			t.Errorf("NSName(%q, %q, %q) = %q: no prefix %q", tc.run, tc.dp, tc.role, name, Prefix)
		}
		p, ok := ParseNSName(name)
		if !ok || p.RunID != tc.run || p.Datapath != tc.dp || p.Role != tc.role {
			t.Errorf("ParseNSName(%q) = %+v, %v; want {%s %s %s}", name, p, ok, tc.run, tc.dp, tc.role)
		}
	}
}

func TestParseNSNameRejects(t *testing.T) {
	for _, name := range []string{"", "cnb", "cnb-", "cnb--x", "other-abc-node1", "cnb-ABC-node1", "cnb-0123456789abcdefg-x-node1"} {
		if p, ok := ParseNSName(name); ok {
			t.Errorf("ParseNSName(%q) = %+v, true; want not a lab name", name, p)
		}
	}
}

func TestNewRunID(t *testing.T) {
	seen := map[string]bool{}
	for range 20 {
		id, err := NewRunID()
		if err != nil {
			t.Fatal(err)
		}
		if err := ValidateRunID(id); err != nil {
			t.Fatalf("NewRunID() = %q: %v", id, err)
		}
		seen[id] = true
	}
	if len(seen) < 15 {
		t.Errorf("20 run ids, only %d distinct", len(seen))
	}
}

func TestValidateRunID(t *testing.T) {
	for id, ok := range map[string]bool{"abc123": true, "a": true, "": false, "a-b": false, "ABC": false, strings.Repeat("a", 17): false} {
		if err := ValidateRunID(id); (err == nil) != ok {
			t.Errorf("ValidateRunID(%q) = %v, want ok=%v", id, err, ok)
		}
	}
}

func TestUnsupportedErrorIs(t *testing.T) {
	var err error = &UnsupportedError{Feature: "netkit device", Reason: "no module"}
	if !errorsIs(err, ErrNotSupported) {
		t.Error("UnsupportedError is not ErrNotSupported")
	}
	if got, want := err.Error(), "netkit device not supported: no module"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errorsIs(ErrNotSupportedOnOS, ErrNotSupported) {
		t.Error("ErrNotSupportedOnOS is not ErrNotSupported")
	}
}
