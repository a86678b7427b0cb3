# svc — see README.md. 'make run' starts a dev peer, 'make test' runs every check.
SHELL := /bin/bash
GO ?= go
export PATH := $(PATH):/usr/local/go/bin:$(shell $(GO) env GOPATH 2>/dev/null)/bin
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
STATICCHECK_VERSION := v0.8.2
# Fuzzing runs each target for a number of executions, not a duration: a
# duration races Go's fuzz coordinator at its end before Go 1.27
# (golang/go#75804, "context deadline exceeded" with no failing input).
# FUZZ_SCALE multiplies every count (e.g. make fuzz FUZZ_SCALE=20).
FUZZ_SCALE ?= 1
fuzzx = $(shell echo $$(($(1) * $(FUZZ_SCALE))))x

IMAGE := build/mini-linux.qcow2
ISO := build/mini-linux.iso
IMAGE_SRC := $(shell find scripts/mini-linux -type f 2>/dev/null)

.PHONY: all help build sign deps deps-run libvirt image run stop test lanes lane-vm lane-rest lint lint-js test-js-deps darwin-check unit unit-vm unit-rest unit-cluster unit-others unit-cluster-share fuzz fuzz-short bench-once bench-once-vm bench-once-deploy bench-once-rest bench-once-swarm netns-test chaos chaos-short bench bench-compare fleet failover-soak local-cluster local-cluster-down clean

all: build

## help: the targets and what each does (the first line of the ## comment above each)
help:
	@awk 'NR == FNR { if (match($$0, /^[a-z][a-z0-9-]*:/)) tgt[substr($$0, 1, RLENGTH - 1)] = 1; next } \
	/^## [a-z][a-z0-9-]*:/ { n = $$2; sub(/:$$/, "", n); if ((n in tgt) && !(n in done)) { done[n] = 1; d = $$0; sub(/^## [^:]*: /, "", d); printf "  %-18s %s\n", n, d } }' Makefile Makefile

## build: bin/svc, the one binary (svc agent and the CLI)
# -trimpath: a build that names no path of the machine it was made on, and
# one build cache with the guest image's Go programs (built so too).
build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/svc ./cmd/svc

## sign: on a Mac, after 'make build': sign bin/svc with the virtualization entitlement (Apple's framework refuses unsigned VMs) and copy it to bin/svc-darwin for scripts/bootstrap-cluster.sh
sign:
	@[ "$$(uname -s)" = Darwin ] || { echo "make sign runs on macOS (codesign)"; exit 1; }
	codesign --force --sign - --entitlements scripts/macos/svc.entitlements bin/svc
	codesign --display --entitlements - bin/svc | grep -q com.apple.security.virtualization
	cp bin/svc bin/svc-darwin

## deps: install the Debian packages svc and its tests need (libvirt, QEMU, the image build's tools, the registry server and Chromium the tests use) where missing
deps:
	scripts/install-deps.sh

## deps-run: only what running a peer and building its image need (make run)
deps-run:
	scripts/install-deps.sh run

## libvirt: start libvirtd and virtlogd where they do not run
libvirt: deps-run
	scripts/libvirt-up.sh

## image: build the default guest image and its installer ISO (rebuilt only when their sources change)
image: $(IMAGE) $(ISO)

$(IMAGE) $(ISO) &: $(IMAGE_SRC) | deps-run
	GO=$(GO) scripts/mini-linux/build.sh $(IMAGE) $(ISO)

## run: start a single-peer dev cluster in the background with the mini-linux image, and say how to reach it
## (at once: svc's build, which needs no package, and the packages, then libvirtd's start and the
## image's build: on a fresh machine svc's build is the longest, libvirtd mostly waits, and the image's
## Go programs come after its kernel part, when svc's build has compiled the standard library they share)
run:
	@$(MAKE) --no-print-directory -j3 build libvirt image
	scripts/dev.sh up

## stop: stop the dev peer started by 'make run'
stop:
	scripts/dev.sh down

## test: everything CI checks (on real libvirt): the packages, the image and the lint, then two lanes at once (lanes);
## at its end, pass or fail, each stage's wall time and the 15 slowest tests and benchmarks (scripts/test-report.sh)
test: export SVC_REQUIRE_LIBVIRT=1
test: export SVC_REQUIRE_REGISTRY=1
test: export SVC_REQUIRE_BROWSER=1
test:
	@rm -rf $(TEST_REPORT) && mkdir -p $(TEST_REPORT)
	@s=0; for t in deps libvirt image lint lanes; do \
		scripts/stage.sh $$t $(MAKE) --no-print-directory $$t || { s=1; break; }; \
	done; scripts/test-report.sh; exit $$s

# Where make test's stages keep their times and its go test runs their
# events (-json), for scripts/test-report.sh. cmd/svc-testreport shows the
# events as go test would: tests as without -v (a failed test's output, each
# package's line), benchmarks with every line they print.
TEST_REPORT := $(CURDIR)/build/test-report
export TEST_REPORT
gotest = set -o pipefail; mkdir -p $(TEST_REPORT) && $(GO) test -json $(2) | tee $(TEST_REPORT)/$(1).json | $(GO) run ./cmd/svc-testreport quiet
gobench = set -o pipefail; mkdir -p $(TEST_REPORT) && $(GO) test -json $(2) | tee $(TEST_REPORT)/$(1).json | $(GO) run ./cmd/svc-testreport output

## lanes: make test's checks after the lint, in two lanes at once. The real-VM lane: the tests on real
## guests and in the browser (unit-vm: e2e/vm, e2e/browser), then the benchmarks that boot guests but
## the deploy ones (bench-once-vm). The other lane runs two things at once: the cluster-wide tests on
## the fake hypervisor (unit-cluster: e2e/cluster, in CLUSTER_SHARDS shares), and beside them a
## sequence: every package's own tests (unit-others),
## fuzz-short, the other benchmarks (bench-once-rest), netns-test, chaos-short, bench-once-swarm (which
## takes the network namespaces netns-test and chaos-short use) and the deploy benchmarks
## (bench-once-deploy: the sequence ends before unit-cluster does, so they leave the VM lane). One after
## another all of it took 40 min on a 2-core machine (2026-12-02), and the machine idled for minutes
## of it: the VM lane waits on guests, the others mostly on Raft and peers.
## Each lane goes on after a failure (make -k), so that one run shows every failure.
## Every cluster the lanes start on the one libvirtd claims its peer names and addresses for the
## whole run in PEER_CLAIMS (testkit/peerclaim): two parts of make test that would share one fail.
PEER_CLAIMS := $(CURDIR)/build/peer-claims
lanes: export SVC_PEER_CLAIMS = $(PEER_CLAIMS)
lanes: build
	@rm -rf $(PEER_CLAIMS) && mkdir -p $(PEER_CLAIMS)
	@$(MAKE) --no-print-directory lane-vm & vm=$$!; \
	$(MAKE) --no-print-directory lane-rest; rest=$$?; \
	wait $$vm; v=$$?; \
	if [ $$v -ne 0 ] || [ $$rest -ne 0 ]; then echo "make test: failed (the VM lane exit $$v, the other lane exit $$rest)"; exit 1; fi

## lane-vm: the real-VM lane of make lanes (unit-vm, then bench-once-vm)
lane-vm:
	@s=0; for t in unit-vm bench-once-vm; do scripts/stage.sh $$t $(MAKE) --no-print-directory $$t || { s=1; echo "lane-vm: $$t failed"; }; done; exit $$s

## lane-rest: the other lane of make lanes (unit-cluster beside the sequence of everything else)
lane-rest: test-js-deps
	@scripts/stage.sh unit-cluster $(MAKE) --no-print-directory unit-cluster & node=$$!; \
	s=0; for t in unit-others fuzz-short bench-once-rest netns-test chaos-short bench-once-swarm bench-once-deploy; do scripts/stage.sh $$t $(MAKE) --no-print-directory $$t || { s=1; echo "lane-rest: $$t failed"; }; done; \
	wait $$node || { s=1; echo "lane-rest: unit-cluster failed"; }; exit $$s

## lint: gofmt, go vet, staticcheck, the layout, layer and method-count checks, the web UI's JavaScript, darwin-check
lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	@command -v staticcheck >/dev/null || $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	staticcheck ./...
	scripts/check-layout.sh
	scripts/check-layers.sh -v
	scripts/check-methods.sh
	$(MAKE) --no-print-directory lint-js
	$(MAKE) --no-print-directory darwin-check

## lint-js: the web UI's modules type-checked by TypeScript (their // @ts-check and JSDoc types) and linted by ESLint, both from npm (httpapi/webui/_check/package-lock.json; a directory the go tool skips)
lint-js:
	cd httpapi/webui/_check && npm ci --no-audit --no-fund --loglevel=error
	cd httpapi/webui && _check/node_modules/.bin/tsc -p _check/jsconfig.json && _check/node_modules/.bin/eslint --config _check/eslint.config.js .

## test-js-deps: the second OpenID provider the sign-in tests run (Node.js oidc-provider, testkit/oidcnode/_js/package-lock.json), from npm
test-js-deps:
	cd testkit/oidcnode/_js && npm ci --no-audit --no-fund --loglevel=error

## darwin-check: type-check the macOS build (the vz driver's calls into Apple's framework) for arm64 and amd64, and build the darwin binaries and every package of the tree for darwin without cgo
darwin-check:
	$(GO) run ./cmd/svc-darwin-check -arch arm64,amd64 ./...
	@GOOS=darwin GOARCH=arm64 CGO_ENABLED=1 $(GO) list -deps ./cmd/svc | grep -qx github.com/Code-Hex/vz/v3 || { echo "the darwin/arm64 build of cmd/svc does not import github.com/Code-Hex/vz/v3"; exit 1; }
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) build -o /dev/null ./cmd/svc
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) build ./...
	GOOS=darwin GOARCH=amd64 CGO_ENABLED=0 $(GO) build -o /dev/null ./cmd/svc
	GOOS=darwin GOARCH=amd64 CGO_ENABLED=0 $(GO) build ./...

## unit: every package's tests, in two processes at once: unit-vm (the tests on real guests and in the
## browser) beside unit-rest (every other test). They mostly wait on guests and on Raft respectively.
## (A third process for the cluster tests, tried, put three lanes of TCG guests on two cores: guests
## missed their boot deadlines and Raft elected all the time.) The 30-minute bound only stops a hung
## test binary. FuzzAPI_post_routes's seeds run in fuzz-short.
## The cluster-wide tests live in e2e/, a folder a lane: e2e/cluster (whole clusters on the fake
## hypervisor), e2e/vm (real guests), e2e/browser (Chromium), e2e/bench, e2e/fuzz; e2e/kit is what
## they share. Every other package's tests test its own code.
E2E_LANES := ./e2e/cluster ./e2e/vm ./e2e/browser ./e2e/fuzz
unit:
	@$(MAKE) --no-print-directory unit-rest & rest=$$!; \
	$(MAKE) --no-print-directory unit-vm; e2e=$$?; \
	wait $$rest; r=$$?; \
	if [ $$e2e -ne 0 ] || [ $$r -ne 0 ]; then echo "unit: failed (the VM lane exit $$e2e, the rest exit $$r)"; exit 1; fi

## unit-vm: the tests on real guests (e2e/vm), then the browser tests (e2e/browser), one package after
## the other (-p 1: two packages of guests at once under TCG on two cores miss their boot deadlines)
unit-vm:
	$(call gotest,unit-vm,-race -count=1 -p 1 -timeout 30m ./e2e/vm ./e2e/browser)

## unit-rest: every test the VM lane leaves, in processes at once: the cluster tests (unit-cluster)
## beside every package's own (unit-others). FuzzAPI_post_routes's seeds run in fuzz-short.
unit-rest: test-js-deps
	@$(MAKE) --no-print-directory unit-cluster & node=$$!; \
	$(MAKE) --no-print-directory unit-others; s=$$?; \
	wait $$node || s=1; exit $$s

## unit-cluster: the cluster-wide tests on the fake hypervisor (e2e/cluster) in CLUSTER_SHARDS shares at
## once (scripts/cluster-shard.sh deals them out by name). One share for now: with two (make test 19 min
## 6 s), three tests whose peers share one process on 200 ms Raft leases lost their leader for want of
## CPU in one run of three; make test CLUSTER_SHARDS=2 tries two.
CLUSTER_SHARDS := 1
unit-cluster:
	@pids=; s=0; for k in $$(seq $(CLUSTER_SHARDS)); do \
		$(MAKE) --no-print-directory unit-cluster-share K=$$k & pids="$$pids $$!"; \
	done; \
	for p in $$pids; do wait $$p || s=1; done; exit $$s

## unit-others: every package's own tests (and e2e/bench's tests of its helpers), the e2e lanes aside
unit-others:
	$(call gotest,unit-others,-race -count=1 -timeout 30m $$($(GO) list ./... | grep -v -x -F $(foreach l,$(E2E_LANES),-e $(patsubst ./%,$(shell $(GO) list -m)/%,$(l)))))

## unit-cluster-share: share K of CLUSTER_SHARDS of the cluster tests
unit-cluster-share:
	p=$$(scripts/cluster-shard.sh $(K) $(CLUSTER_SHARDS)) && { $(call gotest,unit-cluster-$(K),-race -count=1 -timeout 30m -run "$$p" ./e2e/cluster); }

## fuzz: run each fuzz target from its seeds for a few seconds' worth of executions (times FUZZ_SCALE)
fuzz: fuzz-short
	$(GO) test -run '^$$' -fuzz '^FuzzAPI_post_routes$$' -fuzztime $(call fuzzx,900) ./e2e/fuzz

## fuzz-short: make test's fuzzing: the fuzz targets whose coverage build is small, each for its count
## of executions, and FuzzAPI_post_routes's 1,617 seeds (every POST, PATCH and PUT route with every seed
## body, on a live peer) run as a test: fuzzing it needs a coverage build of the peer package and all it
## imports, about 3 minutes, for 900 executions beside the seeds' 1,617 (make fuzz does it)
fuzz-short:
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(call fuzzx,60000) ./raftfsm
	$(GO) test -run '^$$' -fuzz '^FuzzApply$$' -fuzztime $(call fuzzx,40000) ./raftfsm
	$(GO) test -run '^$$' -fuzz '^FuzzAuthenticate$$' -fuzztime $(call fuzzx,40000) ./auth
	$(GO) test -run '^$$' -fuzz '^FuzzQcow2Header$$' -fuzztime $(call fuzzx,300000) ./imagestore/diskcheck
	$(GO) test -run '^$$' -fuzz '^FuzzAgent_answers$$' -fuzztime $(call fuzzx,40000) ./hypervisor/qga
	$(call gotest,fuzz-api-seeds,-count=1 -run '^FuzzAPI_post_routes$$' ./e2e/fuzz)

## bench-once: every benchmark once, so that a change that breaks one fails CI (only the packages that
## have one: go test ./... would build every package's tests again, without -race, to run nothing;
## ./... outside a git checkout). make test runs it in two parts: bench-once-swarm, whose peers live in
## the network namespaces of netns-test and chaos-short, after them, and bench-once-vm, the rest
BENCH_PKGS = $(or $(shell git grep -l '^func Benchmark' -- '*_test.go' 2>/dev/null | xargs -r -n1 dirname | sort -u | sed 's|^|./|'),./...)
SWARM_BENCH := ^BenchmarkImageSwarm$$
DEPLOY_BENCH := ^BenchmarkDeploy_
VM_BENCH := ^(BenchmarkCommit_1GiB|BenchmarkSave_1GiB|BenchmarkRunnerPool_queued_to_started|BenchmarkSharedStorage_)
bench-once: bench-once-vm bench-once-deploy bench-once-rest bench-once-swarm

## bench-once-vm: the benchmarks that boot guests but the deploy ones (the VM lane); bench-once-rest: the others but the swarm's
bench-once-vm:
	$(call gobench,bench-once-vm,-run '^$$' -bench '$(VM_BENCH)' -benchtime 1x -timeout 20m ./e2e/bench)

## bench-once-deploy: the deploy benchmarks (guests booted through the API, ten at once among them)
bench-once-deploy:
	$(call gobench,bench-once-deploy,-run '^$$' -bench '$(DEPLOY_BENCH)' -benchtime 1x -timeout 20m ./e2e/bench)

## bench-once-rest: the benchmarks that boot no guest, once each (the swarm's aside)
bench-once-rest:
	$(call gobench,bench-once-rest,-run '^$$' -bench . -skip '$(VM_BENCH)|$(DEPLOY_BENCH)|$(SWARM_BENCH)' -benchtime 1x -timeout 20m $(BENCH_PKGS))

## bench-once-swarm: the image swarm benchmark once, at 64 MiB (root: network namespaces)
bench-once-swarm:
	export SVC_SWARM_MIB=64; $(call gobench,bench-once-swarm,-run '^$$' -bench '$(SWARM_BENCH)' -benchtime 1x -timeout 20m ./e2e/bench)

## netns-test: 3 peers in network namespaces, then the operators' worst days on them (backup and restore, every host lost, the majority lost, an upgrade from the previous tree: scripts/test-operations.sh); needs root, skipped otherwise
netns-test: build
	@if [ "$$(id -u)" -ne 0 ]; then echo "netns-test: skipped (needs root)"; else scripts/test-local-cluster.sh && scripts/test-operations.sh; fi

## chaos: a chaos run of 5 peers for CHAOS_DURATION (default 10m) with SEED (default: the clock); needs root
CHAOS_DURATION ?= 10m
CHAOS_PEERS ?= 5
SEED ?= 0
chaos: deps build
	$(GO) build -o bin/svc-chaos ./cmd/svc-chaos
	bin/svc-chaos -peers $(CHAOS_PEERS) -duration $(CHAOS_DURATION) -seed $(SEED) -out build/chaos

## chaos-short: the seeded one-minute chaos run make test includes (skipped without root)
chaos-short: deps build
	@if [ "$$(id -u)" -ne 0 ]; then echo "chaos-short: skipped (needs root)"; else \
	$(GO) build -o bin/svc-chaos ./cmd/svc-chaos && bin/svc-chaos -peers 3 -duration 60s -seed 20261121 -out build/chaos-short; fi

## fleet: svc as a fleet grows: at each size of FLEET_PEERS, real agents (fake hypervisor) in network
## namespaces, their writes through the leader (16 clients, 20 s), the leader's idle CPU, the peers' idle
## memory, deploy to Running, a join, a host's and the leader's death timed; then a model fitted to the
## points at FLEET_MODEL's sizes, marked as such (cmd/svc-fleet; root; the table in build/fleet.txt).
## FLEET_AGENT_ARGS are more flags for every agent: FLEET_AGENT_ARGS="--raft-replicas 2" measures a
## bounded Raft group
FLEET_PEERS ?= 3,25,50
FLEET_MODEL ?= 100,1000,5000
FLEET_AGENT_ARGS ?=
fleet: deps build
	@if [ "$$(id -u)" -ne 0 ]; then echo "fleet: needs root (network namespaces)"; exit 1; fi
	$(GO) run ./cmd/svc-fleet -peers $(FLEET_PEERS) -model $(FLEET_MODEL) -agent-args "$(FLEET_AGENT_ARGS)" -out build/fleet.txt

## failover-soak: 3 peers with the production Raft timeouts, every core busy, 10 minutes: no election
failover-soak:
	SVC_SOAK=10m $(GO) test -run 'TestRaft_no_spurious_elections_under_load' -v -timeout 15m ./e2e/cluster

## bench: throughput, latency and failover figures (see README)
bench:
	$(GO) test -run '^$$' -bench 'TagWrite$$' -benchtime 300x ./e2e/bench
	$(GO) test -run '^$$' -bench 'NodeList' -benchtime 2000x ./e2e/bench
	$(GO) test -run '^$$' -bench 'TagWriteParallel' -benchtime 5000x ./e2e/bench
	$(GO) test -run '^$$' -bench 'Store_apply_parallel' -benchtime 5000x ./raftstore
	$(GO) test -run '^$$' -bench 'Failover' -benchtime 20x ./e2e/bench
	$(GO) test -run '^$$' -bench 'Place' -benchtime 2s ./scheduler ./node/leader
	$(GO) test -run '^$$' -bench 'Auth' -benchtime 2s ./httpapi
	$(GO) test -run '^$$' -bench 'Apply_roleBinding' -benchtime 200x ./raftfsm
	$(GO) test -run '^$$' -bench 'FSM_scale' -benchtime 200x ./raftfsm
	$(GO) test -run '^$$' -bench 'Image(Transfer|Download)$$' -benchtime 3x ./e2e/bench
	$(GO) test -run '^$$' -bench 'ImageSwarm' -benchtime 1x -timeout 25m ./e2e/bench
	$(GO) test -run '^$$' -bench 'Registry_' -benchtime 3x -timeout 20m ./imagestore/ocidisk
	$(GO) test -run '^$$' -bench 'JobFlood' -benchtime 1x ./e2e/bench
	$(GO) test -run '^$$' -bench 'Watch_1000_streams' -benchtime 1x ./e2e/bench
	$(GO) test -run '^$$' -bench 'Kube_door_vs_api' -benchtime 5x ./httpapi
	$(GO) test -run '^$$' -bench 'WatchHub_change' -benchtime 200x ./httpapi
	$(GO) test -run '^$$' -bench 'Kube_selector_watches' -benchtime 1x ./e2e/bench
	SVC_REQUIRE_LIBVIRT=1 $(GO) test -run '^$$' -bench 'Deploy_one' -benchtime 5x -timeout 20m ./e2e/bench
	SVC_REQUIRE_LIBVIRT=1 $(GO) test -run '^$$' -bench 'Deploy_after_delete' -benchtime 5x -timeout 20m ./e2e/bench
	SVC_REQUIRE_LIBVIRT=1 $(GO) test -run '^$$' -bench 'Deploy_hot_vs_template_vs_boot' -benchtime 10x -timeout 20m ./e2e/bench
	SVC_REQUIRE_LIBVIRT=1 $(GO) test -run '^$$' -bench 'Deploy_10' -benchtime 2x -timeout 20m ./e2e/bench
	SVC_REQUIRE_LIBVIRT=1 $(GO) test -run '^$$' -bench '(Commit|Save)_1GiB' -benchtime 3x -timeout 20m ./e2e/bench
	SVC_REQUIRE_LIBVIRT=1 $(GO) test -run '^$$' -bench 'RunnerPool_queued_to_started' -benchtime 10x -timeout 20m ./e2e/bench
	SVC_REQUIRE_LIBVIRT=1 $(GO) test -run '^$$' -bench 'SharedStorage_256MiB' -benchtime 3x -timeout 20m ./e2e/bench

## bench-compare: make bench's benchmarks in older trees beside this one, in one run, each benchmark in every tree in turn, then benchstat: make bench-compare REVS="d1387bb 51f917c=Failover|Place" (REV=REGEX: that tree runs only the commands the regex matches)
bench-compare:
	scripts/bench-compare.sh $(foreach r,$(REVS),'$(r)')

## local-cluster: a namespaced cluster of N peers (default 3) to play with (root)
local-cluster: build
	scripts/local-cluster.sh up $(or $(N),3)

## local-cluster-down: stop it
local-cluster-down:
	scripts/local-cluster.sh down

## clean: remove the binary and the guest image
clean:
	rm -rf bin $(IMAGE) $(ISO)
