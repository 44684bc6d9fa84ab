PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: venv demo test lint bench bench-quick bench-spark clean java

$(VENV)/.installed: pyproject.toml setup.py $(wildcard csrc/*.c csrc/*.h csrc/assignors/*.c csrc/assignors/*.h)
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

test: venv lint java
	$(PY) -m pytest -q -n 2 --dist loadgroup -p no:cacheprovider

# The Spark tests (tests/spark) run a local SparkSession, which needs Java 17 or newer.
java:
	@command -v java >/dev/null 2>&1 || [ -n "$$JAVA_HOME" ] || { echo "make test: the Spark" \
	  "tests need Java 17+; install it (Debian/Ubuntu: apt-get install" \
	  "openjdk-17-jre-headless) or set JAVA_HOME" >&2; exit 1; }

bench: venv
	$(PY) bench/all.py

bench-quick: venv
	$(PY) bench/all.py --quick

# Spark reading 1M records: Arrow batches against Python rows (needs Java 17+).
bench-spark: venv java
	$(PY) bench/spark_read.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
