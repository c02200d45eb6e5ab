# Everything here is plain go commands; the Makefile only names them.
.PHONY: build test ci bench fuzz

build:
	go build -ldflags "-X github.com/herdr-pi/herdr-pi/cmd/herdr-pi/commands.Version=$$(git describe --tags --always --dirty 2>/dev/null || echo devel)" -o herdr-pi ./cmd/herdr-pi

test:
	go test -race ./...

ci:
	.ci/run

# Wrapper overhead against util-linux script and a bare pty (see BENCHMARKS.md).
bench:
	HERDR_PI_BENCH=1 go test -run '^TestBenchmark' -v -count=1 -timeout 30m ./e2e/

fuzz:
	.ci/fuzz
