# Two commands on a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export RAY_AUTH_MODE := disabled
export MUJOCO_GL ?= egl
export PYTHONHASHSEED := 0

# Debian packages the project needs beyond Python: headless Chromium (every HTML page is checked in
# it) and Mesa's EGL (MuJoCo renders clips off-screen).
SYSTEM_PACKAGES := chromium libegl1 libegl-mesa0 libgl1-mesa-dri

.PHONY: demo test test-fast format setup system-deps clean

# The install ends by compiling every numba kernel into numba's cache (`policylab.warm_cache`, about 3.5
# minutes on 2 cores), so that neither the first command nor the test workers compile them, each its own copy.
$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q -e ".[test]"
	$(BIN)/python -m policylab.warm_cache
	touch $(STAMP)

# Installs only the packages that are missing, and says which.
system-deps:
	@missing=""; for p in $(SYSTEM_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "system-deps: installing$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	else echo "system-deps: all present ($(SYSTEM_PACKAGES))"; fi

setup: $(STAMP) system-deps

demo: setup
	$(BIN)/policylab demo --out runs/demo

# Tests run in a shuffled order (pytest-randomly), so a test that leans on another's leftovers
# shows; CI fixes the seed so that a red run repeats exactly (`make test RANDOMLY_SEED=N` repeats
# any run: pytest prints the seed it used).
RANDOMLY_SEED ?= $(if $(CI),20261201,)
# Two worker processes (pytest-xdist), one per core of the 2-core CI machine. Not `-n auto`: many
# tests start process pools or a local Ray of their own, so more workers than cores only queue up,
# and a fixed count runs the same schedule everywhere (`make test TEST_WORKERS=4` for more).
# `loadfile` sends each test file to one worker whole: a module-scoped fixture (the demo's run, the
# runs index's run of every command) is made once, not once per worker. Workers get the same seed.
TEST_WORKERS ?= 2
PYTEST := $(BIN)/python -m pytest -p randomly $(if $(RANDOMLY_SEED),--randomly-seed=$(RANDOMLY_SEED),) \
	-n $(TEST_WORKERS) --dist loadfile

# ruff (settings in pyproject.toml) checks style and lint in about a second before any test runs;
# `make format` applies the formatter and the safe fixes.
LINT := $(BIN)/ruff check policylab tests benchmarks && $(BIN)/ruff format --check policylab tests benchmarks

test: setup
	$(LINT)
	$(PYTEST)

# Everything but the tests marked `slow`.
test-fast: setup
	$(LINT)
	$(PYTEST) -m "not slow"

format: setup
	$(BIN)/ruff format policylab tests benchmarks
	$(BIN)/ruff check --fix policylab tests benchmarks

clean:
	rm -rf $(VENV) runs
