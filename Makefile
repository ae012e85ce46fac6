# valnet: make run (the quickstart scenario) and make test are the two
# commands a fresh machine needs. See README.md.
GO        ?= go
BIN       := bin/valnet
PKGS      := ./...
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# SourceDir: an installed valnet builds the docker backend's static node
# binary from this tree, wherever it is run from.
LDFLAGS   := -X main.version=$(VERSION) -X github.com/valnet/valnet/docker.SourceDir=$(CURDIR)
# -trimpath for every go command make runs (and the go builds its tests
# start, which inherit GOFLAGS): the build cache's keys then hold no
# checkout path, so a fresh clone reuses what another checkout of the same
# source compiled instead of compiling the module again (a fresh-clone
# make test spent ~370 of its 592 s recompiling at the clone's new path).
export GOFLAGS := $(strip $(filter-out -trimpath,$(GOFLAGS)) -trimpath)
# Tests that start real networks print node logs only when they fail.
TESTFLAGS ?= -timeout 20m

.PHONY: build run test integ torture fuzz crosscheck bench lint clean

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/valnet

run: build
	$(BIN) run quickstart

test:
	$(GO) vet $(PKGS)
	$(GO) test $(TESTFLAGS) $(PKGS)

# Slower end-to-end checks, bounded for CI (.ci/run; about 15 minutes on
# 2 cores): a sample of the built-ins at full size (INTEG_BUILTINS: the
# quickstart, each real signer part a built-in alone exercises, a network
# fault, and sparse-50, which calibrates the host monitor against
# TestIntegHostOverloaded's mesh), stock cometbft of the lines in
# INTEG_LINES (v0.38, the dialect most chains run, and v1) on
# the process backend and v0.38 in docker, a stock node signing through
# valnet signer serve, the docker backend's engine tests, own apps,
# external and threshold signers, valnet
# sweep and threshold on the process backend, the interrupt harness's sample
# (Ctrl-C at 6 observed moments in-process; on process and docker at the
# 4 where their nodes are up) and the killed runner, a
# crosscheck of the sim MODEL against in-process nodes, SOAK_INTEG of
# soak, the race detector on the concurrent packages, and each fuzz target
# for FUZZTIME_INTEG. One package at a time (-p 1): these tests measure the
# host (a timing check counts only on a host that kept up) and compare real
# runs' timings with the sim's, which two packages' networks sharing the 2
# cores would falsify; in ./runner/ the tests whose checks are load-proof
# (stock lines, the stock signer, external signers: t.Parallel) run two at
# a time once the sequential ones have had the host. The whole matrices are their own targets, outside
# CI: make builtins, make versions, make race, make torture, make
# crosscheck, make soak, make fuzz.
INTEG_BUILTINS ?= quickstart,hsm-vs-local,gnokms-gnokey,ledger-validator,partition-heal,sparse-50
INTEG_LINES    ?= v0.38,v1.0
SOAK_INTEG     ?= 2m
integ:
	VALNET_INTEG_BUILTINS=$(INTEG_BUILTINS) VALNET_INTEG_LINES=$(INTEG_LINES) \
		$(GO) test -tags integ -p 1 -timeout 40m -run 'Integ|UserBinary' -v ./runner/ ./nodes/ ./docker/ ./sweep/ ./crosscheck/ ./calibrate/
	VALNET_SOAK_DURATION=$(SOAK_INTEG) $(GO) test -tags integ -timeout 15m -run 'Integ' -v ./soak/
	$(MAKE) race RACE_RUNNER='$(RACE_RUNNER_INTEG)' RACE_GUARD_CRASHES=$(RACE_GUARD_CRASHES_INTEG)
	$(MAKE) fuzz FUZZTIME=$(FUZZTIME_INTEG)

# What make integ would build, built ahead: the stock cometbft of
# INTEG_LINES (v0.38 and v1.0 are also the stock-signer test's) into
# their cache, and into the Go build cache the static node binary (built
# as the docker backend builds it, -trimpath, which the interrupt harness
# shares) and make integ's integ and race test
# binaries, and each fuzz target's instrumented build (make fuzz builds
# every package again with coverage counters: ~2 minutes cold; run for one
# input here). .ci/run runs it at the lowest CPU priority beside make test
# and waits for it before make integ.
prebuild:
	$(GO) run ./internal/testbin/prebuild -lines $(INTEG_LINES)
	CGO_ENABLED=0 $(GO) build -trimpath -o /dev/null ./cmd/valnet
	$(GO) test -tags integ -count=1 -run '^$$' ./runner/ ./nodes/ ./sweep/ ./crosscheck/ ./calibrate/ ./docker/ ./soak/
	$(GO) test -race -count=1 -run '^$$' ./network/ ./signers/... ./soak/ ./results/ ./nodes/ ./runner/
	@for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; fn=$${t##*:}; \
	  $(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime 1x -parallel 1 ./$$pkg/ > /dev/null || exit 1; \
	done

# Every built-in scenario at full size on its real backend, each also on
# the sim MODEL with the same verdicts, and every one found not overloaded
# on this host (about 12 minutes on 2 cores).
builtins:
	VALNET_INTEG_BUILTINS=all $(GO) test -tags integ -count=1 -timeout 40m -run 'TestIntegBuiltinScenarios|TestIntegHostOverloaded' -v ./runner/

# Every supported CometBFT line's stock binary (built from the Go module
# proxy, once per machine) on the process backend, and v0.38 in docker.
versions:
	VALNET_INTEG_LINES=all $(GO) test -tags integ -count=1 -timeout 40m -run 'TestIntegUserBinaryVersions' -v ./runner/

# Fuzzing (docs/reliability.md#fuzzing): each target for FUZZTIME, one at
# a time (go test -fuzz takes one target per run), on one worker. The last
# status line (execs, time) of each is printed. A failing input is written
# to PKG/testdata/fuzz/TARGET/ and fails the target. A run that ends in
# "context deadline exceeded" having written no input is Go 1.26's race at
# the end of -fuzztime (golang/go#75804), not a finding, and passes.
FUZZTIME       ?= 5m
FUZZTIME_INTEG ?= 10s
FUZZ_TARGETS   := scenarios:FuzzScenario latency:FuzzParse sweep:FuzzSetFlags results:FuzzEvents signers:FuzzServeFrames
fuzz:
	@for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; fn=$${t##*:}; dir=$$pkg/testdata/fuzz/$$fn; \
	  before=$$(ls $$dir 2>/dev/null | wc -l); \
	  out=$$($(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 10s -parallel 1 -timeout 2h ./$$pkg/ 2>&1); code=$$?; \
	  echo "$$pkg $$fn: $$(echo "$$out" | grep 'execs:' | tail -1)"; \
	  if [ $$code -ne 0 ]; then \
	    if [ "$$(ls $$dir 2>/dev/null | wc -l)" = "$$before" ] && echo "$$out" | grep -q 'context deadline exceeded'; then \
	      echo "  (the -fuzztime race of golang/go#75804: no failing input)"; \
	    else echo "$$out" | tail -40; exit 1; fi; \
	  fi; \
	done

# Ctrl-C at TORTURE_MOMENTS moments spread over a run and at the 6 observed
# ones, on every backend, each followed by a search for leaks (processes,
# containers, networks, listeners, sockets, temp dirs); the table goes to
# runs/torture.md (docs/reliability.md). About 25 minutes on 2 cores.
TORTURE_MOMENTS ?= 20
torture:
	mkdir -p runs
	VALNET_TORTURE_MOMENTS=$(TORTURE_MOMENTS) VALNET_TORTURE_TABLE=$(CURDIR)/runs/torture.md \
		$(GO) test -tags integ -count=1 -timeout 90m -run 'TestInterruptTorture' -v ./runner/

# The race detector on the concurrent packages: network, signers (pkcs11
# and ledger included) and soak whole, the results writer and live
# tracker, the nodes' event socket and lifecycle, and RACE_RUNNER's
# runner tests that drive real in-process networks through signer, node
# and network faults, Ctrl-C, a shared device, load and live metrics.
# make integ runs RACE_RUNNER_INTEG of them: the recorder, the loop's
# abilities, every signer path and fault, Ctrl-C, a slow node fault and
# load (the others' concurrency is theirs: the monitor, live metrics).
# TestGuardSurvivesKill9 kills a signer process RACE_GUARD_CRASHES times
# per backend; under -race 200 take ~108 s of the ~122 s of ./signers/,
# so make integ runs 20 (the same crash points' code under the detector;
# make test runs all 200 without it).
RACE_GUARD_CRASHES       ?= 200
RACE_GUARD_CRASHES_INTEG ?= 20
RACE_RESULTS := Writer|Tracker|Stream|Read
RACE_NODES   := Listener|Lifecycle|Incarnations
RACE_RUNNER  ?= TestRecorder|TestNodeFaultsRunOffTheLoopInOrderPerTarget|TestRequestNoter|TestRunSignerPathsAndFaults|TestStopDuringASlowNodeFault|TestHostMonitor|TestLoadGenerator|TestRunInterruptedStopsCleanly|TestRunDrivesBackendAbilities|TestRunMaxDurationEndsTheRun|TestLiveMetricsServeTheRun|TestRunSharedDevice|TestRunLoadAccounting
RACE_RUNNER_INTEG := TestRecorder|TestNodeFaultsRunOffTheLoopInOrderPerTarget|TestRequestNoter|TestRunSignerPathsAndFaults|TestStopDuringASlowNodeFault|TestRunInterruptedStopsCleanly|TestRunDrivesBackendAbilities|TestRunLoadAccounting
.PHONY: race builtins versions prebuild
race:
	VALNET_GUARD_CRASHES=$(RACE_GUARD_CRASHES) $(GO) test -race -timeout 20m ./network/ ./signers/... ./soak/
	$(GO) test -race -timeout 20m -run '$(RACE_RESULTS)' ./results/
	$(GO) test -race -timeout 20m -run '$(RACE_NODES)' ./nodes/
	$(GO) test -race -timeout 20m -run '$(RACE_RUNNER)' ./runner/

# A long soak (docs/reliability.md#soak): random faults of every family
# from a seed on 7 in-process validators, invariants checked as it goes;
# make integ runs 2 minutes of it. Exit 1: an invariant was violated (the
# seed and schedule that reproduce it are printed).
SOAK_SCENARIO ?= baseline
SOAK_DURATION ?= 30m
SOAK_SEED     ?= 1
SOAK_FLAGS    ?=
.PHONY: soak
soak: build
	$(BIN) soak $(SOAK_SCENARIO) --duration $(SOAK_DURATION) --seed $(SOAK_SEED) $(SOAK_FLAGS)

# The whole default crosscheck grid (docs/crosscheck.md), the sim MODEL
# against real in-process nodes: long on 2 cores. It resumes from
# $(CROSSCHECK_OUT) (remove it after changing the grid or the sim) and
# writes the table, failing goals included, to docs/crosscheck-table.md
# (docs/sim.md includes it). Exit 1 (some goals fail) still writes the
# table and passes; a run that could not be done fails the target.
CROSSCHECK_MODEL ?= sim
CROSSCHECK_REAL  ?= inprocess
CROSSCHECK_OUT   ?= runs/crosscheck-default-$(CROSSCHECK_MODEL)-$(CROSSCHECK_REAL)
CROSSCHECK_FLAGS ?=
crosscheck: build
	$(BIN) crosscheck --model $(CROSSCHECK_MODEL) --real $(CROSSCHECK_REAL) --out $(CROSSCHECK_OUT) $(CROSSCHECK_FLAGS); \
	code=$$?; if [ $$code -le 1 ]; then cp $(CROSSCHECK_OUT)/crosscheck.md docs/crosscheck-table.md && echo "wrote docs/crosscheck-table.md"; fi; [ $$code -le 1 ]

# Benchmarks print numbers; nothing is asserted. Overhead prints valnet's
# CPU and peak memory against the same bare CometBFT network (10
# validators x 20 heights, each in its own process). Sim runs the sim
# backend's speed goals (docs/bench.md#sim), ~2 minutes.
bench: build
	$(GO) test -run '^$$' -bench 'Overhead|Network' -benchmem -benchtime 1x -timeout 30m ./runner/
	$(GO) test -run '^$$' -bench 'RecordTxEvent' -benchmem ./runner/
	$(GO) test -run '^$$' -bench . -benchmem -timeout 20m ./results/ ./network/ ./signers/ ./signers/pkcs11/ ./signers/threshold/ ./sweep/
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 30m ./docker/
	$(GO) test -run '^$$' -bench Sim -benchmem -benchtime 1x -timeout 60m ./sim/
	$(BIN) bench signers

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

clean:
	rm -rf bin runs
