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

.PHONY: build run test integ bench lint clean

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
# process and docker backends.
integ:
	$(GO) test -tags integ -timeout 50m -run 'Integ|UserBinary' -v ./runner/ ./nodes/ ./sweep/

# Benchmarks print numbers; nothing is asserted. Overhead prints valnet's
# CPU and peak memory against the same bare CometBFT network (10
# validators x 20 heights, each in its own process).
bench: build
	$(GO) test -run '^$$' -bench 'Overhead|Network' -benchmem -benchtime 1x -timeout 30m ./runner/
	$(GO) test -run '^$$' -bench 'RecordTxEvent' -benchmem ./runner/
	$(GO) test -run '^$$' -bench . -benchmem -timeout 20m ./results/ ./network/ ./signers/ ./signers/pkcs11/ ./sweep/
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 30m ./docker/
	$(BIN) bench signers

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

clean:
	rm -rf bin runs
