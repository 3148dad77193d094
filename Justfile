# admit — common tasks. `just` is optional: each recipe is one plain command.

# Start the server with the development identity and the demo program.
run:
    go run .

# Run every test (browser tests need Debian's chromium-headless-shell or
# chromium, or CHROMIUM_PATH). The
# release build check is opt-in: ADMIT_TEST_RELEASE=1 just test.
test:
    go test ./...

# Regenerate templ components (commit the generated *_templ.go files).
generate:
    go tool templ generate

# Format check, vet, staticcheck, and the templ drift check.
lint:
    test -z "$(gofmt -l .)"
    go vet ./...
    go tool staticcheck ./...
    go tool templ generate && git diff --exit-code -- '*_templ.go'

# Measure (docs/PERFORMANCE.md#the-load-run): the load run against the real binary — flags pass
# through, e.g. `just bench -duration 5s -clients 64` — then the store's Go
# benchmarks. About two and a half minutes on two cores.
bench *FLAGS:
    go run ./cmd/loadgen {{FLAGS}}
    go test -run '^$' -bench . -benchmem ./store

# Chunked retirement and the retention sweep at 100,000 and 1,000,000
# entries (docs/PERFORMANCE.md#chunked-retirement). About twenty minutes.
bench-retire:
    ADMIT_BENCH_LARGE=1 go test ./store -run '^$' -bench 'BenchmarkRetireProgram|BenchmarkSweepRetiredProgram' -benchtime 1x -timeout 60m

# Scale (docs/PERFORMANCE.md#the-scale-run): fresh databases of 10,000, 100,000 and
# 1,000,000 entries with a file replica; owner pages, export, sweep,
# retirement, write-lock holds, backup verify and restore at each size.
# Flags pass through, e.g. `just bench-scale -scale 10000`. About half an
# hour on two cores.
bench-scale *FLAGS:
    go run ./cmd/loadgen -scale 10000,100000,1000000 -timeout 1h {{FLAGS}}

# Crash soak (docs/RELIABILITY.md#the-crash-soak): the real binary with a file replica, signups
# from 32 clients (every tenth removed again at once), SIGKILL and restart at
# once, 20 times; after every restart every new restore point of the replica
# is restored and checked, and the data files searched for removed addresses. Flags pass
# through, e.g. `just soak -cycles 40`. About five minutes on two cores.
soak *FLAGS:
    go run ./cmd/soak {{FLAGS}}

# Check that a signup's timing does not tell a listed address from a new one
# (docs/PERFORMANCE.md#signup-timing): 1,000 of each, interleaved one at a time against the real
# binary, on the JSON API and the form; reports the Mann-Whitney z, which
# must stay within ±3. About half a minute.
bench-timing *FLAGS:
    go run ./cmd/loadgen -scenarios timing {{FLAGS}}

# Overload (docs/PERFORMANCE.md#the-overload-sweep): JSON signups at 32, 64, 128, 256 and
# 1,024 concurrent clients (-sweep), past what the writer commits; reports
# accepted and refused (503 + Retry-After) counts and latencies, the owner
# queue page's p95 meanwhile, and server CPU per accepted signup. About a
# minute; -write-queue N tries another ADMIT_WRITE_QUEUE.
bench-overload *FLAGS:
    go run ./cmd/loadgen -scenarios overload {{FLAGS}}

# Goodput under overload: clients retrying at once after a 503, admit and
# the load generator pinned to a core each (docs/PERFORMANCE.md#running-the-benchmarks).
bench-goodput *FLAGS:
    go run ./cmd/loadgen -scenarios goodput {{FLAGS}}

# Release binaries (docs/DEPLOY.md#release-builds): static, -trimpath, no
# build ID, the version stamped (VERSION=v1.2.0, default git describe), for
# linux/amd64, linux/arm64 and darwin/arm64, into dist/ with SHA256SUMS.
# Without just: `go run ./cmd/release`. Flags pass through, e.g.
# `just release -targets linux/arm64`.
release *FLAGS:
    go run ./cmd/release {{FLAGS}}
