# trace-eval: `make demo` runs everything on the bundled example; `make test` runs the tests; `make lint` checks the
# code (ruff, mypy); `make docs` builds the documentation site into site/.
PYTHON  ?= python3
VENV    := .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed

BENCH   ?= examples/mini
DEVICE  ?= auto
WORKERS ?=
PROFILE ?=
ENGINE  ?= local
RAY_ADDRESS ?=
SET     ?=
MODEL   ?=
FUSION  ?= cap
RUBRIC  ?= trace
RUN     ?=
DEMO_RUN ?= runs/demo
PYTEST_ARGS ?=

.PHONY: install test lint docs demo blueprints judge evaluate example bench clean

install: $(STAMP)

# Everything: every extra pyproject.toml declares (models: torch and the neural cues; dev: the tests and the
# checks; docs: the documentation site; ray: the ray engine).
# The light install for judging and CPU blueprints is `pip install -c constraints.txt .` (see docs/install.md).
EXTRAS := $(shell sed -n '/^\[project.optional-dependencies\]/,/^\[/s/^\([A-Za-z0-9_-]*\) *=.*/\1/p' pyproject.toml | paste -sd, -)

# Re-installs only when the dependency pins or this recipe change.
$(STAMP): pyproject.toml constraints.txt Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[$(EXTRAS)]'
	# The multilingual vocabulary that scripts/make_standin_models.py builds Whisper large-v3's tokenizer from;
	# without its own dependencies (numba, triton), which nothing here imports.
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps openai-whisper==20250625
	touch $@

test: install
	$(PY) -m pytest $(PYTEST_ARGS)

# The checks of every commit, configured in pyproject.toml: lint, formatting, types.
lint: install
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

# The documentation site (mkdocs.yml) into site/, offline; strict: a broken link, a missing page or a warning fails.
docs: install
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

blueprints: install
	$(PY) -m trace_eval blueprints $(BENCH) --device $(DEVICE) --engine $(ENGINE) \
		$(if $(RAY_ADDRESS),--ray-address $(RAY_ADDRESS)) \
		$(if $(WORKERS),--workers $(WORKERS)) $(if $(PROFILE),--profile $(PROFILE)) \
		$(foreach s,$(SET),--set $(s))

judge: install
	$(PY) -m trace_eval judge --bench $(BENCH) --rubric $(RUBRIC) --fusion $(FUSION) $(if $(MODEL),--model $(MODEL)) \
		$(if $(RUN),--out $(RUN))

evaluate: install
	$(PY) -m trace_eval evaluate $(RUN)

# The whole job on the example, offline: blueprints, the `cues` judge, fusion, evaluation.
demo: install
	$(PY) -m trace_eval blueprints $(BENCH) --device $(DEVICE)
	$(PY) -m trace_eval judge --bench $(BENCH) --model cues --fusion $(FUSION) --out $(DEMO_RUN)
	$(PY) -m trace_eval fuse $(DEMO_RUN) --fusion $(FUSION) --table
	$(PY) -m trace_eval view $(DEMO_RUN)
	$(PY) -m trace_eval evaluate $(DEMO_RUN) --out $(DEMO_RUN)/evaluation
	@echo
	@echo "blueprints: python -m trace_eval show $(BENCH)/audio/<file>   (where they are: python -m trace_eval store)"
	@echo "judge run:  $(DEMO_RUN)/results.jsonl   summary: $(DEMO_RUN)/summary.json"
	@echo "report:     $(DEMO_RUN)/evaluation/report.html   ($(DEMO_RUN)/evaluation/report.md)"
	@echo "every pair: $(DEMO_RUN)/view/index.html   (open it in a browser)"

example: install
	$(PY) scripts/make_example.py
	$(PY) scripts/make_example_style.py

bench: install
	$(PY) scripts/bench_extract.py --device $(DEVICE) --engine $(ENGINE)

clean:
	rm -rf $(VENV) examples/*/blueprints runs reports site
