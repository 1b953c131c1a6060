// Package profile samples the CPUs of the whole machine with perf_event_open
// (a cpu-clock software event per CPU, kernel and user call chains) during
// the windows the caller enables, symbolises the stacks (kernel symbols and
// BPF programs from /proc/kallsyms, user frames from the mapped ELF files)
// and returns them as a pprof profile (github.com/google/pprof/profile).
//
// Breakdown classifies every sample into the documented symbol families
// (Families) so that a benchmark cell can report where its CPU went:
// netfilter and conntrack, veth, backlog, bridge, tunnels, BPF programs,
// copies to and from user space, crypto, the TCP/IP stack, scheduler and
// idle, the engine in user space, other user space and the rest of the
// kernel. See docs/profiles.md.
//
// A profile's pprof shape: sample types samples/count and cpu/nanoseconds
// (the sum of the kernel's sampling periods), labels comm (string), pid and
// cpu (numeric), and a root frame per sample named "comm:<comm>" so that a
// flame graph splits by process.
package profile
