package tclb

// Regenerate tclb_bpfel.{go,o} after editing tclb.c or ../headers (needs
// clang and llvm-strip; users and CI do not):
//
//	go generate ./internal/bpf/tclb/
//
//go:generate go tool bpf2go -tags linux -target bpfel -cc clang -cflags "-O2 -g -Wall -Werror" tclb tclb.c -- -I../headers
