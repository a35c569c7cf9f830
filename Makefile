# asrpriv: `make demo` runs the main job on the bundled data; `make test` runs the tests.
# Both create (or reuse) .venv and install everything they need.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.asrpriv-installed

.PHONY: all venv system-deps test test-all demo bench clean

all: test

system-deps:
	bash bin/install-system-deps

$(STAMP): setup.cfg pyproject.toml
	bash bin/install-system-deps
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# torch first: 2.13.0 is a local CPU wheel here; any other request pulls CUDA builds.
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[test,ngram,plot,flower,lhotse]'
	touch $(STAMP)

venv: $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q -m "not slow" tests

test-all: $(STAMP)
	ASRPRIV_HYPOTHESIS_PROFILE=long $(PY) -m pytest -q tests

demo: $(STAMP)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" bash bin/fmp-experiment --reduced examples/data/ami out/demo

# make bench: every benchmark with its defaults (16 min 24 s for the record of 2026-11-25 on the 2-core machine), each
# recording into benchmarks/results.json; then docs/PERFORMANCE.md's table is generated from that file.
BENCH_RESULTS := benchmarks/results.json
bench: $(STAMP)
	$(PY) benchmarks/_record.py start $(BENCH_RESULTS)
	for b in benchmarks/bench_*.py; do ASRPRIV_BENCH_RESULTS=$(BENCH_RESULTS) $(PY) $$b || exit 1; done
	$(PY) benchmarks/_record.py finish $(BENCH_RESULTS)
	$(PY) benchmarks/table.py --readme docs/PERFORMANCE.md $(BENCH_RESULTS)

clean:
	rm -rf $(VENV) out build *.egg-info src/*.egg-info
