# eddy: run `make help` for the targets.

GO       ?= go
PKGS     ?= ./...
FUZZTIME ?= 30s
SOAKTIME ?= 60s
BENCH    ?= .
SOAK_STREAMS ?= 2000
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# The golangci-lint `make lint-tools` installs into bin/ (.golangci.yml
# is written for v2).
GOLANGCI_LINT_VERSION ?= v2.15.0

# The PostgreSQL half of the tests connects here (each run creates and drops
# its own databases).
EDDY_TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable
export EDDY_TEST_DATABASE_URL

.DEFAULT_GOAL := help
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c

.PHONY: help
help: ## list the targets
	@awk 'BEGIN {FS = ":.*?## "} /^[a-zA-Z0-9_-]+:.*?## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: run
run: ## run eddy serve on embedded SQLite in ./eddy-data (prints the admin token on first start)
	$(GO) run ./cmd/eddy serve

.PHONY: build
build: ## build bin/eddy
	$(GO) build -trimpath -ldflags "-X main.version=$(VERSION)" -o bin/eddy ./cmd/eddy

# The platforms make release builds.
RELEASE_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
DIST ?= dist

.PHONY: release
release: ## static binaries for RELEASE_PLATFORMS in dist/ (eddy-VERSION-OS-ARCH, VERSION from git describe) with SHA256SUMS
	rm -rf $(DIST) && mkdir -p $(DIST)
	@for platform in $(RELEASE_PLATFORMS); do \
		os=$${platform%/*}; arch=$${platform#*/}; out=$(DIST)/eddy-$(VERSION)-$$os-$$arch; \
		echo "== $$out"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o $$out ./cmd/eddy || exit 1; \
	done
	cd $(DIST) && if command -v sha256sum >/dev/null; then sha256sum eddy-*; else shasum -a 256 eddy-*; fi > SHA256SUMS
	@cat $(DIST)/SHA256SUMS

.PHONY: docker
docker: ## build the container image eddy:VERSION (Dockerfile: distroless, nonroot, /data volume)
	docker build --build-arg VERSION=$(VERSION) -t eddy:$(VERSION) .

.PHONY: test
test: vet fmt-check pg-check ## vet, gofmt check and every test with -race, SQLite and PostgreSQL (fails without PostgreSQL)
	$(GO) test -race -count=1 -timeout 15m $(PKGS)

.PHONY: test-race
test-race: test ## the same as test (test already runs with -race)

.PHONY: test-short
test-short: ## quick tests: -short, no race detector
	$(GO) test -short -count=1 $(PKGS)

.PHONY: vet
vet: ## go vet
	$(GO) vet $(PKGS)

.PHONY: fmt-check
fmt-check: ## fail if a file is not gofmt'ed
	@out="$$(gofmt -l .)"; \
	if [ -n "$$out" ]; then echo "not gofmt'ed:"; echo "$$out"; exit 1; fi

.PHONY: pg-check
pg-check: ## fail unless PostgreSQL answers at EDDY_TEST_DATABASE_URL
	@if command -v pg_isready >/dev/null; then \
		pg_isready -q -d "$$EDDY_TEST_DATABASE_URL" -t 5 || { echo "PostgreSQL does not answer at $$EDDY_TEST_DATABASE_URL (set EDDY_TEST_DATABASE_URL)"; exit 1; }; \
	else \
		echo "pg_isready not installed: the PostgreSQL tests themselves will fail if it is unreachable"; \
	fi

.PHONY: soak
soak: pg-check ## fault-injection scenarios (TestSoak*, e.g. commits under pg_terminate_backend) for SOAKTIME each (default 60s); SOAK_STREAMS non-reading watch streams (default 2000)
	EDDY_SOAK=$(SOAKTIME) EDDY_SOAK_STREAMS=$(SOAK_STREAMS) $(GO) test -race -count=1 -timeout 60m -run '^TestSoak' -v $(PKGS)

.PHONY: lint
lint: fmt-check vet ## gofmt check, go vet, and golangci-lint (bin/'s from make lint-tools, else one on PATH; skipped if none)
	@lint="$$(command -v ./bin/golangci-lint golangci-lint | head -n1 || true)"; \
	if [ -n "$$lint" ]; then "$$lint" run $(PKGS); \
	else echo "golangci-lint not installed: skipped (make lint-tools installs it; see .golangci.yml)"; fi

.PHONY: lint-tools
lint-tools: ## install golangci-lint GOLANGCI_LINT_VERSION into bin/
	GOBIN=$(CURDIR)/bin $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

.PHONY: fuzz
fuzz: ## run every fuzz target for FUZZTIME (default 30s) each
	@pkgs="$$($(GO) list $(PKGS))"; \
	for pkg in $$pkgs; do \
		list="$$($(GO) test -list '^Fuzz' "$$pkg")"; \
		for target in $$(grep '^Fuzz' <<<"$$list" || true); do \
			echo "== $$pkg $$target"; \
			$(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) "$$pkg"; \
		done; \
	done

.PHONY: console-screenshots
console-screenshots: ## run the console's browser tests (needs chromium) and write their screenshots to docs/console
	EDDY_BROWSER_TESTS=1 EDDY_CONSOLE_SCREENSHOTS=$(CURDIR)/docs/console $(GO) test -count=1 -run '^TestConsole$$' -v ./console

.PHONY: bench-go
bench-go: ## run the in-repo Go benchmarks (BENCH=regexp to choose)
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem $(PKGS)

.PHONY: bench
bench: ## eddy against NATS, etcd and raw PostgreSQL (bench/, <10 min; EDDYBENCH_FLAGS)
	cd bench && $(GO) run ./cmd/eddybench $(EDDYBENCH_FLAGS)

.PHONY: bench-quick
bench-quick: ## the same comparison with smaller sizes (<2 min)
	cd bench && $(GO) run ./cmd/eddybench -quick $(EDDYBENCH_FLAGS)

.PHONY: clean
clean: ## remove build output and test caches (keeps ./eddy-data)
	rm -rf bin $(DIST)
	$(GO) clean -testcache
