# cnibench — container network datapath benchmark.
#
#   sudo make quick      build, then run the quick lab suite with a report
#   sudo make test       every test (privileged ones need root); installs what they run (make deps)
#   sudo make fresh-test the README's commands on a fresh minimal Debian 12 root (what CI runs)
#   sudo make bench      cnibench against netperf, iperf3, hey and wrk (docs/benchmarks.md)
#   sudo make bench BENCH_ARGS="-tests egress-load"   egress filter loaders vs nft -f / ipset restore

SHELL   := /bin/bash
# The Go toolchain: hack/ensure-go.sh finds or installs one new enough for
# go.mod (as root in /usr/local/lib/cnibench-go<version>; see README.md) and
# prints its bin directory. Run at most once per make, only by a target that
# needs Go; its errors are shown and stop make. `make GO=/path/to/go` skips it.
GO = $(eval GO := $(ensure_go))$(GO)
ensure_go = $(shell hack/ensure-go.sh)/go$(if $(filter-out 0,$(.SHELLSTATUS)),$(error hack/ensure-go.sh failed (the reason is above); fix it, or pass GO=/path/to/go))
BIN     := bin/cnibench
VERSION ?= 0.1.0
COMMIT  := $(shell git rev-parse --short HEAD 2>/dev/null)
LDFLAGS := -X github.com/cnibench/cnibench/internal/buildinfo.Version=$(VERSION) \
           -X github.com/cnibench/cnibench/internal/buildinfo.Commit=$(COMMIT)
OUT     ?= cnibench-results/quick-$(shell date +%Y%m%d-%H%M%S)

comma   := ,
# CNIBENCH_QUICK_SHORT=1 shortens `make quick` to two datapaths and one test
# (the fresh-machine test uses it); QUICK_ARGS adds any suite flags.
QUICK_ARGS ?= $(if $(filter 1 true,$(CNIBENCH_QUICK_SHORT)),--datapaths baseline$(comma)veth-routing --tests tcp_rr)

.PHONY: all build quick standard test test-short fuzz generate vet crossbuild bench clean deps fresh-test e2e

all: build

# Static (CGO_ENABLED=0): the same binary runs in the lab and, as the only
# file of its image (cnibench image build), in a cluster's pods.
build:
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/cnibench

# One image for amd64 and arm64 nodes (docs/images.md): static binaries for
# both, built as `build` builds its own (same ldflags), then one
# multi-platform image of them (an OCI image index) by the host's
# bin/cnibench: an OCI archive, bin/cnibench-image.tar, for
# `ctr -n k8s.io images import --all-platforms` or `kind load image-archive`,
# or with IMAGE=REGISTRY/REPOSITORY:TAG pushed there (docker config credentials).
IMAGE ?=
.PHONY: image-multiarch
image-multiarch: build
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -ldflags "$(LDFLAGS)" -o bin/cnibench-linux-amd64 ./cmd/cnibench
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -ldflags "$(LDFLAGS)" -o bin/cnibench-linux-arm64 ./cmd/cnibench
	$(BIN) image build --binary linux/amd64=bin/cnibench-linux-amd64 --binary linux/arm64=bin/cnibench-linux-arm64 \
	  $(if $(IMAGE),--push --ref $(IMAGE),--out bin/cnibench-image.tar)

# The Kubernetes backend end to end on a real two-node cluster started on
# this machine from the package registries (needs root; hack/local-cluster,
# docs/kubernetes.md), leaving the machine as it was. `make e2e` is CI's
# slice: the bridge CNI (the backend's CNI-independent tests: interrupt,
# crash, RBAC, managed cluster, services through kube-proxy, admission) and
# one real CNI, Cilium with VXLAN (the suite, its CPU profile, the egress and
# services scenarios through Cilium's own policy and load balancing), each test
# once (E2E_SET=ci). `make e2e CNI=flannel-vxlan` runs one CNI. The first
# failure stops it; a CNI this kernel cannot run is skipped with the reason.
# `make e2e-all` runs every CNI the harness knows (hack/local-cluster/lib.sh
# CNIS) with every test it can run, whatever fails, each built once and cached
# by version, and ends with a summary (e2e-all.sh): run it before resolving any
# change to the cluster backend, the harness, a CNI or a scenario's cluster path.
CNI ?= bridge cilium-vxlan
E2E_SET ?= ci
.PHONY: e2e-test-bin e2e-all
e2e-test-bin: build
	CGO_ENABLED=0 $(GO) test -c -tags e2e -o bin/e2e.test ./test/e2e
e2e: e2e-test-bin
	@t0=$$(date +%s); for c in $(CNI); do t=$$(date +%s); rc=0; \
	  E2E_SET=$(E2E_SET) hack/local-cluster/suite-e2e.sh --cni $$c $(BIN) bin/e2e.test || rc=$$?; \
	  case $$rc in 0) echo "e2e: $$c passed in $$(( $$(date +%s) - t )) s" ;; \
	    3) echo "e2e: $$c skipped (this kernel cannot run it; the reason is above)" ;; \
	    *) echo "e2e: $$c FAILED (exit $$rc)"; exit 1 ;; esac; done; \
	echo "e2e: $(CNI): done in $$(( $$(date +%s) - t0 )) s"
E2E_ALL_CNI ?=
e2e-all: e2e-test-bin
	hack/local-cluster/e2e-all.sh $(BIN) bin/e2e.test $(E2E_ALL_CNI)

# Seed 002's comparison on the real CNI field, one CNI after another on the
# local cluster (hack/local-cluster/field.sh: each comes up, is verified,
# measured with every check and torn down; a CNI that cannot run is recorded
# with the reason), then one side-by-side report, $(FIELD_OUT)/field.html.
# Needs root; about 10 minutes per CNI, more for a first build of its binaries.
FIELD_OUT ?= cnibench-results/field-$(shell date +%Y%m%d-%H%M%S)
FIELD_CNI ?=
.PHONY: field
field: build
	hack/local-cluster/field.sh $(BIN) $(FIELD_OUT) $(FIELD_CNI)

# The main job: the quick lab suite (needs root), results and report in $(OUT).
quick: build
	$(BIN) suite --profile quick --out $(OUT) $(QUICK_ARGS)

standard: build
	$(BIN) suite --profile standard --out $(subst quick,standard,$(OUT))

# Unit, integration and privileged tests (the latter skip with a reason
# unless run as root), then a short run of every fuzz target: 20,000
# executions each (a cold `make test` came to 16.4 min at 100,000 and 19 min
# at 50,000 beside other work, past its 15-minute budget: docs/ci.md;
# `make fuzz` and `make fuzz-long` run longer), counted rather than timed because Go 1.26's
# fuzzing coordinator can fail a target with a spurious "context deadline
# exceeded" when a -fuzztime duration ends mid-execution (go.dev/issue/75804,
# fixed in Go 1.27). `deps` installs the programs the tests run; with
# CI=true a test missing one fails.
# Each step prints how long it took ("make test: STEP took N s"; .ci/run's
# phase table shows them).
timed = @t=$$(date +%s); $(2) || exit $$?; echo "make test: $(1) took $$(( $$(date +%s) - t )) s"
test:
	$(call timed,deps,hack/deps.sh)
	$(call timed,vet,$(MAKE) --no-print-directory vet GO=$(GO))
	$(call timed,crossbuild,$(MAKE) --no-print-directory crossbuild GO=$(GO))
	$(call timed,go test,$(GO) test -count=1 -timeout 20m ./...)
	$(call timed,fuzz,$(MAKE) --no-print-directory fuzz FUZZTIME=20000x GO=$(GO))

# Debian packages the tests need (nftables, iproute2, iptables, ipset, procps,
# chromium); quick when they are installed.
deps:
	hack/deps.sh

# The README's two commands on a minimal Debian 12 root built with
# debootstrap from this machine's mirror (needs root; hack/freshroot.sh).
fresh-test:
	hack/freshroot.sh

# The tree builds on every OS, so Linux-only code cannot leak into shared
# files unnoticed: what needs Linux lives in _linux.go files, and the
# _other.go files refuse at run time with an error wrapping ErrNotSupported
# (never a faked number). Everything on macOS; the client side (`cnibench
# run`'s engine, the public result packages and the binary) on Windows too.
CROSS_DARWIN_PKGS  ?= ./...
CROSS_WINDOWS_PKGS ?= ./internal/engine/... ./internal/cli/run ./pkg/... ./cmd/cnibench
crossbuild:
	GOOS=darwin $(GO) build $(CROSS_DARWIN_PKGS)
	GOOS=windows $(GO) build $(CROSS_WINDOWS_PKGS)

test-short:
	$(GO) test -short -count=1 ./...

FUZZTIME ?= 30s
FUZZTIME_SVG ?= 5000x
FUZZTIME_EDIVISIVE ?= 5000x
FUZZTIME_EXPOSITION ?= 20000x
# The fuzz targets (control protocol, admission, the parsers of the HTTP
# responses, /proc/net/snmp, /proc/<pid>/stat and /proc/meminfo, conntrack
# statistics, wrk's summary, iptables' and ipset's listings, ipset netlink
# replies, Maglev table construction, and the Kubernetes agent's parsers of
# CNI configuration files and cgroup stat files). Fuzzing builds a target's
# package and every package it imports instrumented, so the parsers live in
# small packages (procfs, nf, ipset): fuzzed in a scenario's package, they
# would rebuild client-go instrumented, minutes on a cold cache. Two targets
# still sit in such packages and run only their seeds in `go test`:
# FuzzParseCurl (internal/scenario/apps) and FuzzParseFlannelNetConf
# (internal/kube/cni).
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzReadMsg$$' -fuzztime $(FUZZTIME) ./internal/engine/
	$(GO) test -run '^$$' -fuzz '^FuzzAdmission$$' -fuzztime $(FUZZTIME) ./internal/engine/server/
	$(GO) test -run '^$$' -fuzz '^FuzzSvcPreamble$$' -fuzztime $(FUZZTIME) ./internal/engine/
	$(GO) test -run '^$$' -fuzz '^FuzzReadResponse$$' -fuzztime $(FUZZTIME) ./internal/engine/httpmsg/
	$(GO) test -run '^$$' -fuzz '^FuzzRespParser$$' -fuzztime $(FUZZTIME) ./internal/engine/httpmsg/
	$(GO) test -run '^$$' -fuzz '^FuzzParseSNMP$$' -fuzztime $(FUZZTIME) ./internal/engine/hoststat/
	$(GO) test -run '^$$' -fuzz '^FuzzParseCTStats$$' -fuzztime $(FUZZTIME) ./internal/lab/
	$(GO) test -run '^$$' -fuzz '^FuzzParseMode$$' -fuzztime $(FUZZTIME) ./internal/scenario/l4lb/lbnet/
	$(GO) test -run '^$$' -fuzz '^FuzzParseWrk$$' -fuzztime $(FUZZTIME) ./bench/parse/
	$(GO) test -run '^$$' -fuzz '^FuzzParseIPSetMemory$$' -fuzztime $(FUZZTIME) ./internal/nf/
	$(GO) test -run '^$$' -fuzz '^FuzzParseDropCounter$$' -fuzztime $(FUZZTIME) ./internal/nf/
	$(GO) test -run '^$$' -fuzz '^FuzzParseTypeReply$$' -fuzztime $(FUZZTIME) ./internal/ipset/
	$(GO) test -run '^$$' -fuzz '^FuzzMemAvailable$$' -fuzztime $(FUZZTIME) ./internal/procfs/
	$(GO) test -run '^$$' -fuzz '^FuzzParseStat$$' -fuzztime $(FUZZTIME) ./internal/procfs/
	$(GO) test -run '^$$' -fuzz '^FuzzParseNetstat$$' -fuzztime $(FUZZTIME) ./internal/netstat/
	$(GO) test -run '^$$' -fuzz '^FuzzParseCrypto$$' -fuzztime $(FUZZTIME) ./internal/hostinfo/
	$(GO) test -run '^$$' -fuzz '^FuzzTable$$' -fuzztime $(FUZZTIME) ./internal/maglev/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeConfig$$' -fuzztime $(FUZZTIME) ./internal/wireguard/
	$(GO) test -run '^$$' -fuzz '^FuzzParseListSAs$$' -fuzztime $(FUZZTIME) ./internal/ipsec/
	$(GO) test -run '^$$' -fuzz '^FuzzParseFrame$$' -fuzztime $(FUZZTIME) ./internal/capture/
	$(GO) test -run '^$$' -fuzz '^FuzzParseCNIConf$$' -fuzztime $(FUZZTIME) ./internal/kube/agent/
	$(GO) test -run '^$$' -fuzz '^FuzzParseCgroupStat$$' -fuzztime $(FUZZTIME) ./internal/kube/agent/
	$(GO) test -run '^$$' -fuzz '^FuzzRecords$$' -fuzztime $(FUZZTIME) ./internal/profile/
	$(GO) test -run '^$$' -fuzz '^FuzzParseKallsyms$$' -fuzztime $(FUZZTIME) ./internal/profile/
	$(GO) test -run '^$$' -fuzz '^FuzzParseCache$$' -fuzztime $(FUZZTIME) ./internal/profile/
	# A flamegraph is drawn per input: 100,000 of them take minutes, 5,000 seconds.
	$(GO) test -run '^$$' -fuzz '^FuzzSVG$$' -fuzztime $(FUZZTIME_SVG) ./internal/report/flame/
	$(GO) test -run '^$$' -fuzz '^FuzzParseRules$$' -fuzztime $(FUZZTIME) ./internal/report/compare/
	$(GO) test -run '^$$' -fuzz '^FuzzExposition$$' -fuzztime $(FUZZTIME_EXPOSITION) ./internal/export/
	$(GO) test -run '^$$' -fuzz '^FuzzEDivisive$$' -fuzztime $(FUZZTIME_EDIVISIVE) ./internal/report/trend/

# The control-protocol fuzz targets for a fixed number of executions each
# (>= 1,000,000 in all; docs/security.md records a run).
FUZZ_EXECS ?= 500000
.PHONY: fuzz-long
fuzz-long:
	$(GO) test -run '^$$' -fuzz '^FuzzReadMsg$$' -fuzztime $(FUZZ_EXECS)x ./internal/engine/
	$(GO) test -run '^$$' -fuzz '^FuzzAdmission$$' -fuzztime $(FUZZ_EXECS)x ./internal/engine/server/

vet:
	$(GO) vet ./...
	$(GO) vet -tags e2e ./test/...
	@gofmt=$(dir $(GO))gofmt; test -z "$$($$gofmt -l $$(git ls-files '*.go'))" || { $$gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }

# Regenerate the BPF objects (needs clang and libbpf-dev; the generated files are committed).
generate:
	$(GO) generate ./internal/bpf/...

clean:
	rm -rf bin

# cnibench side by side with netperf (tcp_rr, tcp_crr), iperf3 (tcp_stream)
# and hey (1000-client http), alternating A B / B A, on loopback and across a
# veth pair between two namespaces; needs root, ~21 min. The rounds, trial
# length, targets and verdict rule are fixed in bench/cmd/peerbench/plan.go;
# BENCH_ARGS adds flags (e.g. the stretch goals: BENCH_ARGS="-pin same -tests
# tcp_rr,tcp_crr", ~11 min); changing -rounds/-duration makes the verdicts
# exploratory. Writes bench/results/peerbench*.{md,json}; see docs/benchmarks.md.
BENCH_ARGS     ?=
bench:
	$(GO) run ./bench/cmd/peerbench -go $(GO) $(BENCH_ARGS)
