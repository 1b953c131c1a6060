// SPDX-License-Identifier: (GPL-2.0-only OR MIT)
//
// counters.h: the per-CPU `counters` array every packet and socket program
// of cnibench keeps (what it did, by index; user space sums the CPUs,
// internal/bpf/mapval), and count(). Include after common.h and
// bpf_helpers.h, where the program has declared its enum counter_idx: its
// last member, CNT_MAX, is the number of counters.

#ifndef __CNB_COUNTERS_H__
#define __CNB_COUNTERS_H__

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, CNT_MAX);
} counters SEC(".maps");

// count adds one to counter idx. The slot is this CPU's: no other CPU
// writes it, and a program does not nest on one CPU for the same packet or
// call, so a plain increment is enough.
static __always_inline void count(__u32 idx)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &idx);
	if (c)
		*c += 1;
}

#endif // __CNB_COUNTERS_H__
