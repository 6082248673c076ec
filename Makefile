# Two commands do all the setup on a fresh machine: `make run` and `make test`.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test

.PHONY: install run test test-unit test-integration infra-fetch infra-up infra-down js-fetch bench bench-spark clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip==24.3.1

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(TEST_STAMP): pyproject.toml $(STAMP)
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

## install: create .venv and install the CLI at .venv/bin/schema-registry
install: $(STAMP)

## run: serve a registry on the embedded store at http://localhost:8081
run: install
	$(BIN)/schema-registry serve $(CONFIG)

## test: install what the tests need, fetch Kafka and ZooKeeper, run every test
test: $(TEST_STAMP) infra-fetch js-fetch
	$(BIN)/python -m pytest tests -q -p no:cacheprovider

test-unit: $(TEST_STAMP)
	$(BIN)/python -m pytest tests/unit -q -p no:cacheprovider

test-integration: $(TEST_STAMP) infra-fetch
	$(BIN)/python -m pytest tests/integration -q -p no:cacheprovider

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

## bench: the benchmarks under bench/ (see bench/README.md)
bench: $(TEST_STAMP)
	$(BIN)/python bench/read_throughput.py
	$(BIN)/python bench/register_latency.py

## bench-spark: registry.spark decoding 1M records against bare from_avro and a fastavro UDF (~2 min)
bench-spark: $(TEST_STAMP) infra-fetch
	$(BIN)/python bench/spark_decode.py

clean:
	rm -rf $(VENV) data .infra *.egg-info
