PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: venv demo test lint bench clean

$(VENV)/.installed: pyproject.toml setup.py groupkit/protocol/_native.c
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

venv: $(VENV)/.installed

demo: venv
	$(VENV)/bin/groupkit demo --processes 3

lint: venv
	$(VENV)/bin/ruff check groupkit assignors tests bench examples
	$(VENV)/bin/mypy

test: venv lint
	$(PY) -m pytest -q -n 2 -p no:cacheprovider

bench: venv
	$(PY) bench/decode.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
