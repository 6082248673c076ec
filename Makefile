# Two commands do all the setup on a fresh machine: `make run` and `make test`.
# The interpreter: the distribution's own Python 3.11 where there is one that can make a
# venv (Debian's needs python3.11-venv), else the first python3.11 on PATH. Debian builds
# /usr/bin/python3.11 with profile-guided and link-time optimisation and links the
# interpreter into the executable, as the official python:3.11 images are built
# (docker/Dockerfile); a pyenv build has neither unless asked, and on this machine the
# registry then spent 1.15x the CPU a registration (README, Architecture).
PYTHON ?= $(shell /usr/bin/python3.11 -c 'import ensurepip, venv' 2>/dev/null && echo /usr/bin/python3.11 || echo python3.11)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
# The exact versions every install here and the image use (pyproject.toml declares ranges);
# `make lock` writes it.
LOCK := requirements.lock

.PHONY: install native jvm bytecode run test test-unit test-integration test-pythons test-lowest lock dist browser infra-fetch infra-up infra-down docker-engine docker-engine-stop js-fetch bench bench-spark clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip==24.3.1

# The Rust extensions (store/replay_native, registry/serde/avro_native) are built by the
# build backend (setuptools-rust, pyproject.toml), as every wheel builds them: the editable
# install compiles them in place where cargo is found (else the modules run in Python,
# logging so once). Cargo keeps its work in the venv and builds only what changed.
CARGO := $(shell command -v cargo 2>/dev/null || ls $(HOME)/.cargo/bin/cargo 2>/dev/null)
ifneq ($(CARGO),)
export PATH := $(dir $(CARGO)):$(PATH)
endif
export CARGO_TARGET_DIR := $(CURDIR)/$(VENV)/cargo-target
NATIVE_SOURCES := $(foreach crate,store/replay_native registry/serde/avro_native,\
  $(crate)/Cargo.toml $(crate)/Cargo.lock $(wildcard $(crate)/src/*.rs))

# The server and the admin commands (`schema-registry export|import|copy|check ...`, which
# need rich): `make install` gives the whole CLI, as the README says.
$(STAMP): pyproject.toml setup.py $(LOCK) $(NATIVE_SOURCES) | $(BIN)/python
	$(BIN)/pip install --quiet -c $(LOCK) -e '.[server,admin]'
	touch $@

$(TEST_STAMP): pyproject.toml setup.py $(LOCK) $(STAMP)
	$(BIN)/pip install --quiet -c $(LOCK) -e '.[server,test]'
	touch $@

## install: create .venv and install the CLI at .venv/bin/schema-registry
install: $(STAMP) bytecode native

## native: the two Rust extensions, built in place by `make install` (see above):
## - store/replay_native: the replay's common case (bench/cold_start.py), store/cache.py;
## - registry/serde/avro_native: the deserializers' Avro decoder (bench/serde.py).
## A crate's change re-runs the editable install ($(STAMP) depends on its sources).
native: $(STAMP)
ifeq ($(CARGO),)
	@echo "make native: cargo not found: the replay and Avro decoding run in Python (slower)"
else
	@$(BIN)/python -c 'import store._replay_native, registry.serde._avro_native' \
	  || { echo "make native: the editable install did not build the Rust extensions (see pip's output)"; exit 1; }
endif

# registry/spark's JVM expression (registry/spark/jvm), compiled with javac against the
# Spark jars pyspark ships into the jar `connector_jars` adds to a session; without it
# registry/spark decodes with spark-avro's from_avro (slower), and the tests of the
# expression fail, saying so. Where javac is missing and we are root, Debian's JDK 17 is
# installed (infra already needs Java 17). Rebuilt when a source changes.
SPARK_JVM_JAR := registry/spark/jvm/registry-spark.jar
SPARK_JVM_SOURCES := $(sort $(wildcard registry/spark/jvm/*.java))
jvm: $(TEST_STAMP)
	@command -v javac >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q openjdk-17-jdk-headless \
	      || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q openjdk-17-jdk-headless; }; \
	  fi; }
	@if command -v javac >/dev/null 2>&1; then $(MAKE) --no-print-directory $(SPARK_JVM_JAR); \
	else echo "make jvm: javac not found: registry.spark decodes with spark-avro's from_avro (slower)"; fi

$(SPARK_JVM_JAR): $(SPARK_JVM_SOURCES)
	rm -rf $(VENV)/jvm-classes && mkdir -p $(VENV)/jvm-classes
	javac -nowarn --release 17 -d $(VENV)/jvm-classes \
	  -cp "$$($(BIN)/python -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')/*" \
	  $(SPARK_JVM_SOURCES)
	"$$(dirname "$$(readlink -f "$$(command -v javac)")")/jar" --create --file $@ -C $(VENV)/jvm-classes registry

# An editable install leaves our modules uncompiled, and where PYTHONDONTWRITEBYTECODE is
# set (as on CI) every start compiles them again: ~70 ms of each cold start
# (bench/cold_start.py). A wheel install compiles them; this does the same for the
# checkout, and only what changed.
bytecode: $(STAMP)
	$(BIN)/python -m compileall -q registry store election > /dev/null

## run: serve a registry on the embedded store at http://localhost:8081
run: install
	$(BIN)/schema-registry serve $(CONFIG)

## test: install what the tests need, fetch Kafka and ZooKeeper, run every test
test: $(TEST_STAMP) bytecode native jvm infra-fetch js-fetch
	$(BIN)/python -m pytest tests -q -p no:cacheprovider

## browser: Debian's chromium for the web UI tests (tests/api/test_web_ui.py, Playwright
## without its own browsers), installed when missing and we are root; otherwise those
## tests skip, saying so
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium \
	      || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; }; \
	  else echo "make browser: chromium is missing and cannot be installed here (not root or no apt-get)"; fi; }

test: browser
test: docs

test-unit: $(TEST_STAMP) native
	$(BIN)/python -m pytest tests/unit -q -p no:cacheprovider

test-integration: $(TEST_STAMP) infra-fetch
	$(BIN)/python -m pytest tests/integration -q -p no:cacheprovider

## test-pythons: the unit suite and the client side's suites on every other supported Python
## (3.12, 3.13: pyenv's or python3.X on PATH), each in its own venv (.venv-3.X) from the
## lock, the two at once (one core each); the full suite runs on $(VENV)'s 3.11
EXTRA_PYTHONS := 3.12 3.13
CLIENT_SUITES := tests/integration/serde/test_client_api.py tests/integration/serde/test_evolution.py \
  tests/integration/serde/test_interop.py tests/integration/serde/test_interop_json_protobuf.py
python_for = $(or $(lastword $(sort $(wildcard $(HOME)/.pyenv/versions/$(1).*/bin/python))),$(shell command -v python$(1)))
# The installs one after the other (each writes the checkout's egg-info), the suites at once.
test-pythons: $(EXTRA_PYTHONS:%=.venv-%/.installed)
	$(MAKE) --no-print-directory -j2 --output-sync=target $(EXTRA_PYTHONS:%=test-python-%)

test-python-%: .venv-%/.installed
	.venv-$*/bin/python -m pytest tests/unit $(CLIENT_SUITES) -q -p no:cacheprovider

# A venv of its own (uv's: its downloads run in parallel, a cold CI saves minutes), with a
# `*` .gitignore inside as Python 3.13's venv writes one. Cargo's target folder is shared
# with $(VENV)'s: only pyo3 and our crates are rebuilt for another interpreter.
.venv-%/.installed: pyproject.toml setup.py $(LOCK) $(NATIVE_SOURCES) | $(TEST_STAMP)
	@test -n "$(call python_for,$*)" || { echo "make test-pythons: no Python $* (pyenv install $*)"; exit 1; }
	test -x .venv-$*/bin/python || $(BIN)/uv venv --quiet --seed --python $(call python_for,$*) .venv-$*
	echo '*' > .venv-$*/.gitignore
	$(BIN)/uv pip install --quiet --python .venv-$*/bin/python --compile-bytecode -c $(LOCK) -e '.[server,test]'
	touch $@

## test-lowest: the client side installed at pyproject's lower bounds (uv's lowest-direct:
## every direct dependency at its lowest allowed version) in .venv-lowest, and its unit tests
LOWEST := .venv-lowest
CLIENT_UNIT_TESTS := tests/unit/registry/client tests/unit/registry/serde tests/unit/test_client_side_imports.py
# What those tests use beyond the client side: pytest, confluent-kafka's own Protobuf
# serializer to compare with (it imports google.type), the metrics' optional registry.
LOWEST_TEST_TOOLS := 'pytest>=9.2.0' 'hypothesis>=6.170.17' 'googleapis-common-protos>=1.76.0' 'prometheus-client>=0.26.0'
test-lowest: $(TEST_STAMP)
	test -x $(LOWEST)/bin/python || $(BIN)/uv venv --quiet --python $(BIN)/python $(LOWEST)
	echo '*' > $(LOWEST)/.gitignore
	CARGO_TARGET_DIR=$(CURDIR)/$(LOWEST)/cargo-target $(BIN)/uv pip install --quiet --python $(LOWEST)/bin/python \
	  --resolution lowest-direct --reinstall-package schema-registry-py \
	  --editable '.[schema-types]' $(LOWEST_TEST_TOOLS)
	$(LOWEST)/bin/python -m pytest $(CLIENT_UNIT_TESTS) -q -p no:cacheprovider

test: test-pythons test-lowest

## lock: requirements.lock from pyproject.toml, one for every supported Python (uv, universal);
## versions already locked stay unless pyproject excludes them (`make lock UPGRADE=1` moves all)
lock: $(TEST_STAMP)
	$(BIN)/uv pip compile pyproject.toml --universal --python-version 3.11 \
	  --extra server --extra admin --extra spark --extra test $(if $(UPGRADE),--upgrade) --quiet -o $(LOCK)

TWINE_VERSION := 7.0.0
## dist: the sdist and the wheel (cp311-abi3: the Rust extensions and registry.spark's jar in
## it) into dist/, the wheel built from the sdist as pip would, then `twine check`
dist: $(TEST_STAMP)
	rm -rf dist
	SPARK_HOME="$$($(BIN)/python -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')" \
	  $(BIN)/python -m build --outdir dist .
	$(BIN)/uv tool run --quiet --from 'twine==$(TWINE_VERSION)' twine check --strict dist/*.whl dist/*.tar.gz
	echo '*' > dist/.gitignore

## interop-deps: the real clients tests/interop runs, from their registries: npm ci of
## @confluentinc/schemaregistry and @kafkajs/confluent-schema-registry, a go build of
## confluent-kafka-go's schemaregistry client (cgo, librdkafka static; minutes cold, seconds
## after), confluent-kafka's CEL rule packages. Each is keyed on its lock files' content.
INTEROP := .infra/interop
INTEROP_JS := tests/interop/js
INTEROP_GO := tests/interop/go
INTEROP_PY_REQS := tests/interop/python/requirements.txt
INTEROP_NPM_KEY := $(shell cat $(INTEROP_JS)/package.json $(INTEROP_JS)/package-lock.json | sha256sum | cut -c1-16)
INTEROP_NPM_STAMP := $(INTEROP_JS)/node_modules/.interop-$(INTEROP_NPM_KEY)
INTEROP_GO_FILES := $(INTEROP_GO)/go.mod $(INTEROP_GO)/go.sum $(sort $(wildcard $(INTEROP_GO)/*.go))
INTEROP_GO_KEY := $(shell cat $(INTEROP_GO_FILES) | sha256sum | cut -c1-16)
INTEROP_GO_BIN := $(INTEROP)/go-client
INTEROP_GO_STAMP := $(INTEROP)/go-client-$(INTEROP_GO_KEY)
INTEROP_PY_STAMP := $(VENV)/.installed-interop

.PHONY: interop-deps test-interop
interop-deps: $(INTEROP_NPM_STAMP) $(INTEROP_GO_STAMP) $(INTEROP_PY_STAMP)

# Inside node_modules, so deleting it installs again. No install scripts: nothing the
# clients use needs one (protobufjs's only checks its own version).
$(INTEROP_NPM_STAMP):
	cd $(INTEROP_JS) && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
	touch $@

$(INTEROP_GO_STAMP):
	mkdir -p $(INTEROP)
	rm -f $(INTEROP)/go-client-*
	cd $(INTEROP_GO) && CGO_ENABLED=1 go build -buildvcs=false -o $(abspath $(INTEROP_GO_BIN)) .
	touch $@

$(INTEROP_PY_STAMP): $(INTEROP_PY_REQS) $(TEST_STAMP)
	$(BIN)/pip install --quiet -r $(INTEROP_PY_REQS)
	touch $@

## test-interop: only the interop suite (tests/interop)
test-interop: interop-deps
	$(BIN)/python -m pytest tests/interop -q -p no:cacheprovider

test: interop-deps

## docs: the documentation site (mkdocs.yml, docs/) built strictly into .venv/site: a broken
## link, a missing anchor or a page left out of the navigation fails it (and so make test)
.PHONY: docs
docs: $(TEST_STAMP)
	@$(BIN)/python -c 'import mkdocs' 2>/dev/null || $(BIN)/pip install --quiet 'mkdocs==1.6.1'
	$(BIN)/mkdocs build --strict --quiet

## infra-*: real Kafka (KRaft) and ZooKeeper from Maven Central, on loopback;
## infra-fetch also puts Spark's Kafka and Avro connector jars in .infra/jars/spark
infra-fetch:
	python3 -m infra fetch

## js-fetch: the JavaScript client the API tests drive (tests/api/js, pinned by its lock file)
js-fetch: tests/api/js/node_modules/.package-lock.json

tests/api/js/node_modules/.package-lock.json: tests/api/js/package.json tests/api/js/package-lock.json
	cd tests/api/js && npm ci --no-audit --no-fund --ignore-scripts

infra-up: infra-fetch
	python3 -m infra up

infra-down:
	python3 -m infra down

## docker-engine: where no Docker engine answers, as root, install Debian's docker.io and
## start dockerd with its data under .infra/docker, for the container tests (else they skip);
## docker-engine-stop stops that engine (never one this did not start)
docker-engine:
	docker/engine.sh start

docker-engine-stop:
	docker/engine.sh stop

## bench: the benchmarks under bench/ (see bench/README.md)
bench: $(TEST_STAMP) bytecode
	$(BIN)/python bench/read_throughput.py
	$(BIN)/python bench/register_latency.py

## bench-spark: registry.spark decoding 1M records against bare from_avro and a fastavro UDF (~2 min)
bench-spark: $(TEST_STAMP) bytecode jvm infra-fetch
	$(BIN)/python bench/spark_decode.py

clean: docker-engine-stop
	rm -rf $(VENV) $(EXTRA_PYTHONS:%=.venv-%) $(LOWEST) dist data .infra *.egg-info
	rm -f store/_replay_native*.so registry/serde/_avro_native*.so
