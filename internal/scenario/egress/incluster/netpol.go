package incluster

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/cnibench/cnibench/internal/kube"
)

// maxIPBlocksPerPolicy bounds the ipBlocks (peers) of one NetworkPolicy made
// by DenyEgressPolicies. Blocks without excepts are about 30 bytes of JSON
// each, so a full object of them stays far below any request limit.
const maxIPBlocksPerPolicy = 1000

// allIPv4 and allIPv6 are the whole address spaces.
var (
	allIPv4 = netip.MustParsePrefix("0.0.0.0/0")
	allIPv6 = netip.MustParsePrefix("::/0")
)

// ipRegion is one ipBlock of DenyEgressPolicies: cidr allowed, except the
// deny CIDRs inside it.
type ipRegion struct {
	cidr   netip.Prefix
	except []netip.Prefix
}

// DenyEgressPolicies returns standard NetworkPolicies (networking.k8s.io/v1)
// that, together, let the pods podSelector matches in namespace reach every
// address except those in deny: egress to the deny CIDRs is refused, and
// everything else, DNS and IPv6 included, stays allowed.
//
// NetworkPolicy is allow-only and the allows of several policies are
// unioned, so splitting "0.0.0.0/0 except [N CIDRs]" into several objects
// with a chunk of the excepts each would deny nothing. Instead IPv4 is cut
// into disjoint regions: starting at 0.0.0.0/0, a region holding more than
// maxPerObject deny CIDRs is split into its two halves, recursively; a deny
// CIDR that covers a whole region removes it. Each region becomes an ipBlock
// {cidr: region, except: the deny CIDRs inside it}, and the ipBlocks are
// packed into objects of at most maxPerObject excepts (and at most 1 000
// ipBlocks) each. The first object also allows ::/0, so that a pod of a
// dual-stack cluster keeps its IPv6 egress. With at most maxPerObject deny
// CIDRs this is the one object users write: 0.0.0.0/0 except all of them.
//
// deny must be IPv4; it is normalised first (masked, sorted, a CIDR inside
// another dropped), so the excepts may be fewer than len(deny). The objects
// are named name-0, name-1…, of policyTypes [Egress], labelled labels.
func DenyEgressPolicies(name, namespace string, podSelector metav1.LabelSelector, deny []netip.Prefix, maxPerObject int, labels map[string]string) ([]*networkingv1.NetworkPolicy, error) {
	set, err := DenyEgressPolicySet(name, namespace, podSelector, deny, maxPerObject, labels)
	if err != nil {
		return nil, err
	}
	out := make([]*networkingv1.NetworkPolicy, 0, set.Len())
	for i := range set.Len() {
		out = append(out, set.Policy(i))
	}
	return out, nil
}

// PolicySet is DenyEgressPolicies' objects, built one at a time when asked
// for (Policy): only the normalised deny CIDRs and the regions' bounds are
// held, so a million CIDRs' excepts (their strings) are never all in
// memory at once.
type PolicySet struct {
	groups      [][]ipRegion
	name, ns    string
	podSelector metav1.LabelSelector
	labels      map[string]string
}

// Len is the number of objects.
func (s *PolicySet) Len() int { return len(s.groups) }

// Policy builds object i (0 ≤ i < Len), a fresh copy each call.
func (s *PolicySet) Policy(i int) *networkingv1.NetworkPolicy {
	g := s.groups[i]
	peers := make([]networkingv1.NetworkPolicyPeer, 0, len(g))
	for _, r := range g {
		b := &networkingv1.IPBlock{CIDR: r.cidr.String()}
		if len(r.except) > 0 {
			b.Except = kube.PrefixStrings(r.except)
		}
		peers = append(peers, networkingv1.NetworkPolicyPeer{IPBlock: b})
	}
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: s.name + "-" + strconv.Itoa(i), Namespace: s.ns, Labels: maps.Clone(s.labels)},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: *s.podSelector.DeepCopy(),
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress:      []networkingv1.NetworkPolicyEgressRule{{To: peers}},
		},
	}
}

// DenyEgressPolicySet is DenyEgressPolicies, built one object at a time.
func DenyEgressPolicySet(name, namespace string, podSelector metav1.LabelSelector, deny []netip.Prefix, maxPerObject int, labels map[string]string) (*PolicySet, error) {
	if maxPerObject < 1 {
		return nil, fmt.Errorf("deny egress policies %s: %d deny CIDRs per object: want at least 1 (default %d)", name, maxPerObject, kube.DefaultPolicyChunk)
	}
	if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
		return nil, fmt.Errorf("deny egress policies %s: namespace %q is not a valid namespace name: %s", name, namespace, errs[0])
	}
	if _, err := metav1.LabelSelectorAsSelector(&podSelector); err != nil {
		return nil, fmt.Errorf("deny egress policies %s/%s: invalid pod selector: %w", namespace, name, err)
	}
	if err := kube.ValidLabels(labels); err != nil {
		return nil, fmt.Errorf("deny egress policies %s/%s: %w", namespace, name, err)
	}
	deny, err := kube.NormalizeDeny(deny)
	if err != nil {
		return nil, fmt.Errorf("deny egress policies %s/%s: %w", namespace, name, err)
	}
	regions := append([]ipRegion{{cidr: allIPv6}}, partition(allIPv4, deny, maxPerObject)...)
	groups := pack(regions, maxPerObject, maxIPBlocksPerPolicy)
	if err := kube.ValidObjectNames(name, len(groups)); err != nil {
		return nil, fmt.Errorf("deny egress policies in %s: %w", namespace, err)
	}
	return &PolicySet{groups: groups, name: name, ns: namespace, podSelector: *podSelector.DeepCopy(), labels: maps.Clone(labels)}, nil
}

// partition returns the regions of r (an IPv4 prefix) that DenyEgressPolicies
// allows, each with the deny CIDRs inside it as excepts (at most limit), in
// address order. deny must be sorted, disjoint and inside r.
func partition(r netip.Prefix, deny []netip.Prefix, limit int) []ipRegion {
	for _, d := range deny {
		if d.Bits() <= r.Bits() {
			return nil // d covers r (and, deny being disjoint, is its only CIDR)
		}
	}
	if len(deny) <= limit {
		return []ipRegion{{cidr: r, except: deny}}
	}
	// More than limit ≥ 1 disjoint CIDRs strictly inside r: r is at most a
	// /31, so it has two halves.
	lo, hi := halves(r)
	i, _ := slices.BinarySearchFunc(deny, hi.Addr(), func(p netip.Prefix, a netip.Addr) int { return p.Addr().Compare(a) })
	return append(partition(lo, deny[:i], limit), partition(hi, deny[i:], limit)...)
}

// halves returns the two halves of IPv4 prefix r (shorter than /32).
func halves(r netip.Prefix) (lo, hi netip.Prefix) {
	bits := r.Bits() + 1
	a := r.Addr().As4()
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	v |= 1 << (32 - bits)
	hiAddr := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	return netip.PrefixFrom(r.Addr(), bits), netip.PrefixFrom(hiAddr, bits)
}

// pack groups regions, in order, into groups of at most maxExcept excepts
// and maxBlocks regions each. A region never has more than maxExcept
// excepts (partition's limit).
func pack(regions []ipRegion, maxExcept, maxBlocks int) [][]ipRegion {
	var out [][]ipRegion
	var cur []ipRegion
	excepts := 0
	for _, r := range regions {
		if len(cur) > 0 && (excepts+len(r.except) > maxExcept || len(cur) >= maxBlocks) {
			out = append(out, cur)
			cur, excepts = nil, 0
		}
		cur = append(cur, r)
		excepts += len(r.except)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}
