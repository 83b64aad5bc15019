# questiond — common tasks. `make test` is the whole test suite (what CI runs).
GO       ?= go
BIN      ?= bin/questiond
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# Fuzzing in `make test` is time-boxed in total: FUZZBUDGET seconds shared
# equally by every fuzz target (at least 5 s each); FUZZTIME=30s instead
# gives each target that long.
FUZZBUDGET ?= 80
# Where `make tui` keeps its screen captures and logs (go test -artifacts).
TUI_ARTIFACTS ?= artifacts/tui
# Where `make ui` keeps the browser's screenshots and console logs.
UI_ARTIFACTS ?= artifacts/ui
LDFLAGS  := -s -w -X main.version=$(VERSION)

.PHONY: all build run test check quick unit postgres tui ui fuzz compat compat-postgres conformance bench bench-opencode bench-compare lint clean

# A bare `make` builds the binary; `make test` is the whole suite.
.DEFAULT_GOAL := build

all: lint test build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/questiond

# ARGS are questiond's flags: make run ARGS='--store memory --addr 127.0.0.1:4601'
run:
	$(GO) run ./cmd/questiond $(ARGS)

# The whole suite: static checks, unit and end-to-end tests with the race
# detector, a short run of every fuzz target, the OpenCode SDK
# compatibility tests with the OpenCode SDK and the MCP TypeScript SDK (each
# installs its npm packages itself) on the suites' own stores and on
# PostgreSQL, the official MCP conformance suite against /mcp, the real
# OpenCode TUI, and the /ui page in a real browser.
test: lint unit postgres fuzz compat compat-postgres conformance tui ui

# Every package but e2e/tui and e2e/ui, which `make tui` and `make ui` run
# with their artifacts kept.
unit:
	$(GO) test -race -count=1 -timeout 20m $$($(GO) list ./... | grep -v -e '/e2e/tui$$' -e '/e2e/ui$$')

# The HTTP API (golden and MCP included) and Go client suites once more on
# the PostgreSQL store: every harness gets a fresh database on a throwaway
# server (internal/pgtest installs Debian's postgresql package with apt-get
# when it is missing and the tests run as root). `unit` runs the PostgreSQL
# store's own tests and three replicas.
postgres:
	QUESTIOND_TEST_STORE=postgres $(GO) test -race -count=1 -timeout 30m ./internal/httpapi/ ./client/...

# The real OpenCode TUI (opencode-ai from npm, cached in the user's cache
# directory) in tmux against questiond; installs tmux with apt-get when
# root. Screen captures and logs of every test land in $(TUI_ARTIFACTS).
# OPENCODE=x.y.z tries another opencode-ai release than the pinned one.
tui:
	mkdir -p $(TUI_ARTIFACTS)
	QUESTIOND_TUI_VERSION=$(OPENCODE) $(GO) test -race -count=1 -timeout 20m -v -artifacts -outputdir $(abspath $(TUI_ARTIFACTS)) ./e2e/tui/

# The /ui page in headless chromium (Debian's package, installed with
# apt-get when missing and root) driven by chromedp. Screenshots and the
# browser's console of every test land in $(UI_ARTIFACTS).
ui:
	mkdir -p $(UI_ARTIFACTS)
	$(GO) test -race -count=1 -timeout 10m -v -artifacts -outputdir $(abspath $(UI_ARTIFACTS)) ./e2e/ui/

# The inner loop while editing (under 2 minutes on 2 cores, see docs/development.md):
# static checks, then every unit test with the race detector and the fuzz
# targets' seed corpora as plain tests; heavy tests (the real binary as a
# process, soak tests, browsers, the OpenCode TUI, PostgreSQL) skip under
# -short, see internal/testenv. CI never runs this: it runs `make test`.
# CHECKP test binaries run at once (go test -p; its default is the number
# of cores): most packages spend their time waiting on timers, sockets and
# fsync, not on a core, so on 2 cores 4 at once take a fifth less time.
CHECKP ?= 4
check: lint
	$(GO) test -race -short -count=1 -p $(CHECKP) ./...

# The unit tests of `make check` without the static checks.
quick:
	$(GO) test -race -short -count=1 -p $(CHECKP) ./...

fuzz:
	GO="$(GO)" ./test/fuzz.sh $(FUZZBUDGET) $(FUZZTIME)

# The OpenCode SDK and MCP TypeScript SDK suites and questiond bridge in
# front of server-everything (test/, Node.js 20 and npm), each daemon on the
# suite's own store: bolt, memory and memory. Then questiond in front of the
# real OpenCode (opencode serve, pinned, offline with a fake model, through
# test/offlineopencode): the OpenCode SDK suite again with each daemon
# started with --upstream, and test/opencode-upstream, OpenCode's own routes
# through the SDK directly and through questiond, compared.
compat:
	./test/opencode-sdk/run.sh
	./test/mcp-sdk/run.sh
	./test/bridge-everything/run.sh
	QUESTIOND_TEST_UPSTREAM=opencode ./test/opencode-sdk/run.sh
	./test/opencode-upstream/run.sh

# The same three suites with every daemon on --store postgres: a throwaway
# server (internal/pgtest's, through test/withpostgres) with a fresh
# database for each daemon.
compat-postgres:
	QUESTIOND_TEST_STORE=postgres ./test/opencode-sdk/run.sh
	QUESTIOND_TEST_STORE=postgres ./test/mcp-sdk/run.sh
	QUESTIOND_TEST_STORE=postgres ./test/bridge-everything/run.sh

# The official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned, on Node 22 from npm) against questiond's /mcp, scenario by
# scenario; test/mcp-conformance/expected.txt lists the check ids that must
# pass (about a minute). A missing npm or Node 22 binary fails it.
conformance:
	GO="$(GO)" ./test/mcp-conformance/run.sh

# BENCH selects benchmarks (a -bench pattern), PKG the packages, COUNT the runs.
bench:
	$(GO) test -run '^$$' -bench '$(or $(BENCH),.)' -benchmem -count=$(or $(COUNT),1) $(or $(PKG),./...)

# questiond (memory and bolt) beside OpenCode's server (opencode-ai from npm,
# pinned, cached like `make tui`'s) and a bare server, under one load
# generator; prints the Markdown table BENCHMARKS.md keeps (about 4 min here).
# BENCH_ARGS go to bench/cmd/sidebyside: BENCH_ARGS='-duration 1s -rounds 1'.
bench-opencode:
	./bench/opencode.sh $(BENCH_ARGS)

# Round trips per second of questiond built from two revisions, each run as
# a process with agent tokens and an operator password, the two taking turns
# at 1, 64 and 512 agents on bolt and memory (about 12 min here); prints the
# Markdown table BENCHMARKS.md keeps. AFTER defaults to HEAD; settings in
# bench/compare.sh (QUESTIOND_BENCH_RUNS, _DURATION, _AGENTS, _STORES, _FLAGS).
bench-compare:
	GO="$(GO)" ./bench/compare.sh $(or $(BEFORE),$(error BEFORE=<rev> is required)) $(or $(AFTER),HEAD)

lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

clean:
	rm -rf bin artifacts
