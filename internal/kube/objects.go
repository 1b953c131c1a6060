package kube

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation"
)

// What the builders of objects share: the checks of their names and
// labels, the deny CIDRs of policy objects, and the size of what is sent.

// DefaultPolicyChunk is the default largest number of deny CIDRs in one
// policy object (a NetworkPolicy's excepts, a CiliumClusterwideNetworkPolicy's
// toCIDR entries, a GlobalNetworkSet's nets). Seed 004 split its manifests
// at 50 000 CIDRs, to stay below etcd's 1.5 MiB request limit. Measured on
// the local cluster (etcd 3.4, 100 000 rules, one run per chunk; docs/
// scenarios.md): a CIDR costs about 19 bytes of JSON, so one object of
// 100 000 (1.92 MB) is refused ("etcdserver: request is too large"), 75 000
// is accepted, and the API server took the whole set in 0.46 s (2 objects),
// 0.61 s (50 000: 3), 0.64 s (25 000: 6) and 0.96 s (10 000: 16). 50 000
// keeps a third of the limit in reserve (longer addresses, other fields)
// at a cost within that spread; --policy-chunk changes it.
const DefaultPolicyChunk = 50000

// NormalizeDeny checks that deny CIDRs are valid IPv4 prefixes and returns
// them masked, sorted by address, without duplicates and without those
// inside another one, so that the result is disjoint: what every builder
// of deny objects takes. Already so, deny itself is returned (no copy of a
// million CIDRs); else a new slice.
func NormalizeDeny(deny []netip.Prefix) ([]netip.Prefix, error) {
	if normalized(deny) {
		return deny, nil
	}
	ps := make([]netip.Prefix, 0, len(deny))
	for i, p := range deny {
		switch {
		case !p.IsValid():
			return nil, fmt.Errorf("deny CIDR #%d is not a valid prefix (pass prefixes parsed with netip.ParsePrefix)", i)
		case !p.Addr().Is4():
			return nil, fmt.Errorf("deny CIDR %s is not IPv4: the egress deny objects take IPv4 CIDRs only (pass IPv4 prefixes; unmap IPv4-mapped ones)", p)
		}
		ps = append(ps, p.Masked())
	}
	slices.SortFunc(ps, func(a, b netip.Prefix) int {
		return cmp.Or(a.Addr().Compare(b.Addr()), cmp.Compare(a.Bits(), b.Bits()))
	})
	// Sorted by address then length, a prefix inside another comes after
	// it, with no prefix that is not inside it between them.
	out := ps[:0]
	for _, p := range ps {
		if n := len(out); n > 0 && out[n-1].Contains(p.Addr()) {
			continue
		}
		out = append(out, p)
	}
	return slices.Clip(out), nil
}

// normalized reports whether deny is what NormalizeDeny returns: valid
// IPv4 prefixes, masked, in ascending address order, each after the end of
// the one before (so neither duplicates nor one inside another).
func normalized(deny []netip.Prefix) bool {
	for i, p := range deny {
		if !p.IsValid() || !p.Addr().Is4() || p.Masked() != p {
			return false
		}
		if i > 0 {
			prev := deny[i-1]
			if prev.Addr().Compare(p.Addr()) >= 0 || prev.Contains(p.Addr()) {
				return false
			}
		}
	}
	return true
}

// PrefixStrings returns ps as strings.
func PrefixStrings(ps []netip.Prefix) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

// ValidLabels checks that labels are valid label keys and values.
func ValidLabels(labels map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf("label key %q is not valid: %s", k, errs[0])
		}
		if errs := validation.IsValidLabelValue(labels[k]); len(errs) > 0 {
			return fmt.Errorf("label %s=%q: value not valid: %s", k, labels[k], errs[0])
		}
	}
	return nil
}

// ValidObjectNames checks that name-0 … name-(n-1), the names of n objects
// made from one name, are valid object names (DNS subdomains).
func ValidObjectNames(name string, n int) error {
	last := name + "-" + strconv.Itoa(max(n-1, 0))
	if errs := validation.IsDNS1123Subdomain(last); len(errs) > 0 {
		return fmt.Errorf("object name %q (from name %q) is not valid: %s", last, name, errs[0])
	}
	return nil
}

// ObjectBytes returns the length of obj's JSON encoding, what client-go
// sends to the API server for it (unless configured for protobuf); 0 if obj
// cannot be encoded.
func ObjectBytes(obj any) int {
	b, err := json.Marshal(obj)
	if err != nil {
		return 0
	}
	return len(b)
}
