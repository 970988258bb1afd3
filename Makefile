# trace-eval: `make demo` runs everything on the bundled example; `make test` runs the tests.
PYTHON  ?= python3
VENV    := .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed

BENCH   ?= examples/mini
DEVICE  ?= auto
WORKERS ?=
PROFILE ?=
SET     ?=
MODEL   ?=
FUSION  ?= cap
PYTEST_ARGS ?=

.PHONY: install test demo blueprints judge evaluate example bench clean

install: $(STAMP)

# Re-installs only when the dependency pins change.
$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[dev]'
	touch $@

test: install
	$(PY) -m pytest $(PYTEST_ARGS)

blueprints: install
	$(PY) -m trace_eval blueprints $(BENCH) --device $(DEVICE) \
		$(if $(WORKERS),--workers $(WORKERS)) $(if $(PROFILE),--profile $(PROFILE)) \
		$(foreach s,$(SET),--set $(s))

judge: install
	$(PY) -m trace_eval judge --bench $(BENCH) --fusion $(FUSION) $(if $(MODEL),--model $(MODEL))

demo: install
	$(PY) -m trace_eval blueprints $(BENCH) --device $(DEVICE)
	@echo "blueprints: $(BENCH)/blueprints/"

example: install
	$(PY) scripts/make_example.py

bench: install
	$(PY) scripts/bench_extract.py --device $(DEVICE)

clean:
	rm -rf $(VENV) examples/*/blueprints runs reports
