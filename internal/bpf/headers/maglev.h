// SPDX-License-Identifier: (GPL-2.0-only OR MIT)
//
// maglev.h: a new flow's backend chosen by Maglev, as the two load
// balancers choose it (internal/bpf/tclb, internal/bpf/nslb's lb.c): the
// `services` map (struct svc_key -> the service's Maglev table and its
// number of backends), every service's Maglev table in one array
// (`maglev`, filled by user space from internal/maglev), the `backends`
// array, and the lookup. Include after lbpacket.h and counters.h, where
// the program has declared CNT_NO_BACKEND (a service packet without a
// usable backend, counted here) and its struct backend: `addr` (network
// order, 0 for a removed backend) and whatever else it needs of one.

#ifndef __CNB_MAGLEV_H__
#define __CNB_MAGLEV_H__

// The Maglev table size (a prime, set by the loader).
volatile const __u32 maglev_m = 251;

struct svc_val {
	__u32 id; // the service's Maglev table is maglev[id*maglev_m ...]
	__u32 count;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct svc_key);
	__type(value, struct svc_val);
	__uint(max_entries, 1); // set by the loader
} services SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u32); // backend id
	__uint(max_entries, 1); // services * maglev_m, set by the loader
} maglev SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct backend);
	__uint(max_entries, 1); // set by the loader
} backends SEC(".maps");

// maglev_size returns maglev_m, or 0 (counted CNT_NO_BACKEND) when it is 0
// or service svc has no backends. The caller computes the flow's hash only
// when it is not 0.
static __always_inline __u32 maglev_size(const struct svc_val *svc)
{
	__u32 m = maglev_m;
	if (svc->count == 0 || m == 0) {
		count(CNT_NO_BACKEND);
		return 0;
	}
	return m;
}

// maglev_backend returns the backend in slot hash % m (m: maglev_size's
// answer) of service svc's Maglev table, or NULL (counted CNT_NO_BACKEND)
// when the slot is empty or its backend removed.
static __always_inline struct backend *maglev_backend(const struct svc_val *svc, __u32 m, __u32 hash)
{
	__u32 slot = svc->id * m + hash % m;
	__u32 *id = bpf_map_lookup_elem(&maglev, &slot);
	if (!id) {
		count(CNT_NO_BACKEND);
		return NULL;
	}
	struct backend *be = bpf_map_lookup_elem(&backends, id);
	if (!be || be->addr == 0) {
		count(CNT_NO_BACKEND);
		return NULL;
	}
	return be;
}

#endif // __CNB_MAGLEV_H__
