package hostrouting

// Regenerate hostrouting_bpfel.{go,o} after editing hostrouting.c or
// ../headers (needs clang and llvm-strip; users and CI do not):
//
//	go generate ./internal/bpf/hostrouting/
//
//go:generate go tool bpf2go -tags linux -target bpfel -cc clang -cflags "-O2 -g -Wall -Werror" hostrouting hostrouting.c -- -I../headers
