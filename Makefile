# cnibench — container network datapath benchmark.
#
#   sudo make quick      build, then run the quick lab suite with a report
#   sudo make test       every test (privileged ones need root)
#   make bench           cnibench against netperf, neper, iperf3 and hey (docs/benchmarks.md)

SHELL   := /bin/bash
GOBIN_DIR := $(shell hack/ensure-go.sh 2>/dev/null || true)
GO      := $(if $(GOBIN_DIR),$(GOBIN_DIR)/go,go)
BIN     := bin/cnibench
VERSION ?= 0.1.0
COMMIT  := $(shell git rev-parse --short HEAD 2>/dev/null)
LDFLAGS := -X github.com/cnibench/cnibench/internal/buildinfo.Version=$(VERSION) \
           -X github.com/cnibench/cnibench/internal/buildinfo.Commit=$(COMMIT)
OUT     ?= cnibench-results/quick-$(shell date +%Y%m%d-%H%M%S)

.PHONY: all build quick standard test test-short fuzz generate vet bench clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/cnibench

# The main job: the quick lab suite (needs root), results and report in $(OUT).
quick: build
	$(BIN) suite --profile quick --out $(OUT)

standard: build
	$(BIN) suite --profile standard --out $(subst quick,standard,$(OUT))

# Unit, integration and privileged tests (the latter skip with a reason
# unless run as root), then a short run of every fuzz target.
test: vet
	$(GO) test -count=1 -timeout 20m ./...
	$(MAKE) --no-print-directory fuzz FUZZTIME=5s

test-short:
	$(GO) test -short -count=1 ./...

FUZZTIME ?= 30s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzReadMsg$$' -fuzztime $(FUZZTIME) ./internal/engine/
	$(GO) test -run '^$$' -fuzz '^FuzzReadResponse$$' -fuzztime $(FUZZTIME) ./internal/engine/

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }

# Regenerate the BPF objects (needs clang and libbpf-dev; the generated files are committed).
generate:
	$(GO) generate ./internal/bpf/...

clean:
	rm -rf bin

# cnibench side by side with netperf (tcp_rr, tcp_crr), iperf3 (tcp_stream)
# and hey (1000-client http), alternating A B / B A, on loopback and across a
# veth pair between two namespaces; needs root, ~12 min with the defaults.
# Writes bench/results/peerbench.{md,json}; see docs/benchmarks.md.
BENCH_ROUNDS   ?= 6
BENCH_DURATION ?= 5s
BENCH_ARGS     ?=
bench:
	$(GO) run ./bench/cmd/peerbench -rounds $(BENCH_ROUNDS) -duration $(BENCH_DURATION) $(BENCH_ARGS)
