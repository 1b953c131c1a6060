package nslb

// Regenerate lb_bpfel.{go,o} and worker_bpfel.{go,o} after editing lb.c,
// worker.c, nslb.h or ../headers (needs clang and llvm-strip; users and CI
// do not):
//
//	go generate ./internal/bpf/nslb/
//
//go:generate go tool bpf2go -tags linux -target bpfel -cc clang -cflags "-O2 -g -Wall -Werror" lb lb.c -- -I../headers
//go:generate go tool bpf2go -tags linux -target bpfel -cc clang -cflags "-O2 -g -Wall -Werror" worker worker.c -- -I../headers
