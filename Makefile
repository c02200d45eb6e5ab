# Everything here is plain go commands; the Makefile only names them.
.PHONY: build test ci bench fuzz faults soak reliability

# Without cgo: herdr-pi needs none, and a static binary starts faster
# (no dynamic loader; README.md "Building").
build:
	v=$$(git describe --tags --always --dirty 2>/dev/null || echo devel); \
	CGO_ENABLED=0 go build -ldflags "-X github.com/herdr-pi/herdr-pi/internal/buildinfo.Release=$$v" -o herdr-pi ./cmd/herdr-pi

# Every test, with the race detector, never from the cache. A test that
# lacks something (Pi, tmux, ../shared) skips outside CI and fails under
# CI=true; the skips are summed up in one line at the end.
test:
	@skips=$$(mktemp); status=0; \
	HERDR_PI_SKIP_LOG=$$skips go test -race -count=1 -timeout 45m ./... || status=$$?; \
	if [ -s $$skips ]; then \
		printf 'skipped %d test(s): ' $$(wc -l < $$skips); \
		cut -f2 $$skips | sort | uniq -c | awk '{n=$$1; $$1=""; printf "%s%s (%d)", sep, substr($$0,2), n; sep="; "} END {print ""}'; \
	fi; rm -f $$skips; exit $$status

ci:
	.ci/run

# Regenerates BENCHMARKS.md: every figure measured in one run against its
# baseline (util-linux script, a bare pty), interleaved. About 17 minutes;
# knobs in e2e/benchdoc_test.go.
bench:
	HERDR_PI_BENCH_DOC=$(CURDIR)/BENCHMARKS.md go test -run '^$$' -bench '^BenchmarkDoc$$' -benchtime 1x -v -count=1 -timeout 90m ./e2e/

fuzz:
	.ci/fuzz

# RELIABILITY.md: every fault test it lists (with -race), then the
# 30-minute soak; writes the file with machine, date and commands.
reliability:
	go run ./e2e/reliability -soak 30m -out RELIABILITY.md

# The fault tests alone; prints the table, writes nothing.
faults:
	go run ./e2e/reliability -soak 0 -out -

# The soak alone, 30 minutes (CI runs one minute of it in make test).
soak:
	HERDR_PI_SOAK=30m go test -count=1 -timeout 70m -run '^TestSoak$$' -v ./e2e/
