package socklb

// Regenerate socklb_bpfel.{go,o} after editing socklb.c or ../headers (needs
// clang and llvm-strip; users and CI do not):
//
//	go generate ./internal/bpf/socklb/
//
//go:generate go tool bpf2go -tags linux -target bpfel -cc clang -cflags "-O2 -g -Wall -Werror" socklb socklb.c -- -I../headers
