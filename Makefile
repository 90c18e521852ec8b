# Context Window Lab: one command for every routine job. `make help` lists them.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
LESSON ?= course/01-budget/budget.ipynb
SUBMISSIONS ?= submissions
DEST   ?= student-repo
# JupyterLab as a learner sees it (jupyter-config/learner/README.md): added to Jupyter's search
# path for the one server `make lab` starts, never written to the user's own configuration
LEARNER_CONFIG := $(CURDIR)/jupyter-config/learner
LAB = $(BIN)/jupyter lab --ServerApp.root_dir=. --LabApp.default_url=/lab/tree/$(LESSON) \
	$(if $(filter 0,$(shell id -u)),--allow-root)

.DEFAULT_GOAL := help
.PHONY: help setup lab lab-instructor test test-fast lint docs release grade canvas bench student-repo

help: ## list the commands
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-15s %s\n", $$1, $$2}'

setup: $(STAMP) ## create .venv with the pinned dependencies and ctxlab (run by every other target)

$(STAMP): requirements.txt requirements-dev.txt constraints.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt -c constraints.txt
	# nbgrader's classes for the hub's exchange service (hub/README.md). Its metadata asks for
	# jupyter-core<4.11.2, which JupyterLab 4 cannot use; it needs only jupyter_core.paths,
	# and tests/test_hub_ngshare.py runs it end to end with the pinned jupyter-core.
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps ngshare-exchange==0.5.3
	$(BIN)/python -c "import ctxlab; ctxlab.encoding()"
	touch $@

lab: setup ## the learner's command: the course in JupyterLab at lesson 01, offline, as on Binder
	JUPYTER_CONFIG_PATH="$(LEARNER_CONFIG)$(if $(JUPYTER_CONFIG_PATH),:$(JUPYTER_CONFIG_PATH))" $(LAB)

lab-instructor: setup ## JupyterLab with nbgrader's instructor panels (formgrader, create assignment)
	$(LAB)

test: setup ## run every test: library, lessons graded with nbgrader, browser
	$(BIN)/python -m pytest

test-fast: setup ## the tests that take seconds (no nbgrader runs, no browser)
	$(BIN)/python -m pytest -m "not slow and not browser"

lint: setup ## ruff over the library, tools and tests
	$(BIN)/ruff check ctxlab autograder tests bench data hub docs

docs: setup ## the API reference from the docstrings (pdoc), links checked: build/api/index.html
	$(BIN)/python docs/build_api.py build/api

release: setup ## regenerate course/ from solutions/ (never edit course/ by hand)
	$(BIN)/python -m autograder release

grade: setup ## grade a class: make grade SUBMISSIONS=path/to/folder-or-archives
	$(BIN)/python -m autograder grade $(SUBMISSIONS)

canvas: setup ## fill in a Canvas gradebook export: make canvas EXPORT=gradebook.csv MAP="01-budget=4101 ..."
	$(BIN)/python -m autograder canvas "$(EXPORT)" --results grading-output $(foreach m,$(MAP),--map $(m))

bench: setup ## run the benchmarks (not part of `make test`); writes bench/results/
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r bench/requirements.txt -c constraints.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r bench/requirements-counting.txt
	$(BIN)/python bench/run.py

student-repo: setup ## export a learner-only copy (no solutions, no hidden tests) to $(DEST)
	$(BIN)/python -m autograder student-repo $(DEST)
