package cidrfilter

// Regenerate egress_bpfel.{go,o} after editing egress.c or ../headers (needs
// clang and llvm-strip; users and CI do not):
//
//	go generate ./internal/bpf/cidrfilter/
//
//go:generate go tool bpf2go -tags linux -target bpfel -cc clang -cflags "-O2 -g -Wall -Werror" egress egress.c -- -I../headers
