# Two commands on a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export RAY_AUTH_MODE := disabled
export MUJOCO_GL ?= egl
export PYTHONHASHSEED := 0

.PHONY: demo test setup system-deps clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q -e ".[test]"
	touch $(STAMP)

# Debian packages the tests need: headless Chromium (HTML reports), Mesa EGL (MuJoCo offscreen clips).
system-deps:
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }
	@ldconfig -p | grep -q libEGL_mesa || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libegl-mesa0 libgl1-mesa-dri libegl1; }

setup: $(STAMP) system-deps

demo: setup
	$(BIN)/policylab demo --out runs/demo

test: setup
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) runs
