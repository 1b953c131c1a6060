// Package ipsec encrypts the lab's node-to-node pod traffic with IPsec ESP
// in tunnel mode: between the two node wire addresses, for the pod CIDRs,
// with AES-GCM (rfc4106(gcm(aes))) or AES-CBC + HMAC-SHA-256.
//
// Two implementations, measured under different labels:
//
//   - kernel ESP: xfrm states and policies configured over netlink (States,
//     Policies, Apply, Remove), as Cilium and Calico do. It needs a kernel
//     with ESP (CONFIG_INET_ESP) and the AEAD in its crypto API; ProbeKernel
//     says which is missing, and a point that cannot run is recorded
//     "skipped: <reason>", never replaced by something else.
//   - userspace ESP ("ipsec-userspace"): strongSwan's charon with the
//     kernel-libipsec plugin, one instance per node namespace, doing ESP
//     (in UDP) in its own process behind a TUN device (StartUserspace,
//     ProbeUserspace). Its cost is a userspace tunnel's, not kernel ESP's.
//
// README.md covers the overhead and MTU arithmetic and key handling.
package ipsec
