# valnet: make run (the quickstart scenario) and make test are the two
# commands a fresh machine needs. See README.md.
GO        ?= go
BIN       := bin/valnet
PKGS      := ./...
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# SourceDir: an installed valnet builds the docker backend's static node
# binary from this tree, wherever it is run from.
LDFLAGS   := -X main.version=$(VERSION) -X github.com/valnet/valnet/docker.SourceDir=$(CURDIR)
# Tests that start real networks print node logs only when they fail.
TESTFLAGS ?= -timeout 20m

.PHONY: build run test integ torture crosscheck bench lint clean

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/valnet

run: build
	$(BIN) run quickstart

test:
	$(GO) vet $(PKGS)
	$(GO) test $(TESTFLAGS) $(PKGS)

# Slower end-to-end checks: every built-in scenario at full size, a stock
# cometbft node signing through valnet signer serve, a stock cometbft as one
# of four validators (process backend), valnet sweep and threshold on the
# process and docker backends, and a crosscheck of the sim MODEL against
# in-process nodes on four cases of the default grid. The interrupt
# harness's sample (Ctrl-C at 6 observed moments per backend) and the
# killed-runner test are in ./runner/ (TestInterruptInteg,
# TestKilledRunnerInteg).
integ:
	$(GO) test -tags integ -timeout 50m -run 'Integ|UserBinary' -v ./runner/ ./nodes/ ./sweep/ ./crosscheck/ ./calibrate/

# Ctrl-C at TORTURE_MOMENTS moments spread over a run and at the 6 observed
# ones, on every backend, each followed by a search for leaks (processes,
# containers, networks, listeners, sockets, temp dirs); the table goes to
# runs/torture.md (docs/reliability.md). About 25 minutes on 2 cores.
TORTURE_MOMENTS ?= 20
torture:
	mkdir -p runs
	VALNET_TORTURE_MOMENTS=$(TORTURE_MOMENTS) VALNET_TORTURE_TABLE=$(CURDIR)/runs/torture.md \
		$(GO) test -tags integ -count=1 -timeout 90m -run 'TestInterruptTorture' -v ./runner/

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
# backend's speed goals (docs/bench.md#sim), ~10 minutes.
bench: build
	$(GO) test -run '^$$' -bench 'Overhead|Network' -benchmem -benchtime 1x -timeout 30m ./runner/
	$(GO) test -run '^$$' -bench 'RecordTxEvent' -benchmem ./runner/
	$(GO) test -run '^$$' -bench . -benchmem -timeout 20m ./results/ ./network/ ./signers/ ./signers/pkcs11/ ./sweep/
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 30m ./docker/
	$(GO) test -run '^$$' -bench Sim -benchmem -benchtime 1x -timeout 60m ./sim/
	$(BIN) bench signers

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

clean:
	rm -rf bin runs
