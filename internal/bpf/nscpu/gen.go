package nscpu

// Regenerate nscpu_bpfel.{go,o} after editing nscpu.c or ../headers (needs
// clang and llvm-strip; users and CI do not):
//
//	go generate ./internal/bpf/nscpu/
//
//go:generate go tool bpf2go -tags linux -target bpfel -cc clang -cflags "-O2 -g -Wall -Werror" -type cpu_state -type usage nscpu nscpu.c -- -I../headers
