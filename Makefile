# kconform: `make conformance` sets up and runs the suite; `make test` runs the project's own tests.
# Variables: ADAPTER=module:attr  LEVEL=protocol|pipeline|all  (default: those of kconform run)
#            BROKER=kafka|kafka-cluster|kafka-sasl|tansu|external|testcontainers
#            PROFILE=quick|default|thorough
#            KAFKA_VERSION=3.9.2|4.1.1|4.4.0  (the Apache Kafka release of BROKER=kafka|kafka-cluster|kafka-sasl;
#            default the pinned one; conformance/brokers/versions.py lists them, others are resolved on first use)
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
BROKER ?= kafka
PROFILE ?= default
REPORT ?= build/report
# JVM artifacts (versions pinned in jvm/pom.xml), resolved by Maven (kconform setup) into $(JVM_DIR)/<module>/.
JVM_DIR := .jvm
JVM_POMS := jvm/pom.xml $(filter-out jvm/flink-harness/%,$(wildcard jvm/*/pom.xml))
export KCONFORM_PROFILE := $(PROFILE)
export KCONFORM_BROKER := $(BROKER)
ifneq ($(KAFKA_VERSION),)
export KCONFORM_KAFKA_VERSION := $(KAFKA_VERSION)
endif

.PHONY: setup conformance test test-long check bugbank compat spec bench bench-gate soak soak-long workload probe lint docs site verdicts golden mutation mutation-report flink-versions clean

setup: $(VENV)/.installed $(JVM_DIR)/.resolved

$(VENV)/.installed: pyproject.toml constraints.txt
	@command -v java >/dev/null || { echo "kconform needs Java 17 on PATH (PySpark and TLC run on it): apt-get install openjdk-17-jre-headless" >&2; exit 1; }
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "kconform needs Python >= 3.11")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[all,dev]'
	@touch $@

# kconform setup resolves them (the same command a wheel's user runs; it says what it fetched, and a second
# run with the same poms starts no Maven). Without mvn the Python side still installs; pipeline tests on kafka
# are then ERROR, Tansu only on request (kconform run --broker tansu or --allow-fallback, which says what
# Tansu cannot show).
$(JVM_DIR)/.resolved: $(VENV)/.installed $(JVM_POMS) $(filter-out jvm/flink-harness/%,$(wildcard jvm/*/src/main/java/*/*.java))
	@if command -v mvn >/dev/null; then \
	  $(BIN)/kconform setup --into $(JVM_DIR) && touch $@; \
	else \
	  echo "kconform: mvn not found, so Apache Kafka cannot be fetched: install Maven 3.8+ (apt-get install maven)" >&2; \
	  echo "kconform: and run 'make setup' again; until then choose the embedded Tansu broker: make conformance BROKER=tansu" >&2; \
	fi

# ADAPTER and LEVEL are passed only when set: kconform run's defaults say, in one place, what this runs.
conformance: setup
	$(BIN)/kconform run $(if $(ADAPTER),--adapter $(ADAPTER)) $(if $(LEVEL),--level $(LEVEL)) \
	  --broker $(BROKER) --profile $(PROFILE) --report $(REPORT)

# TEST_WORKERS pytest-xdist processes (most tests wait on brokers, Spark and subprocesses: two share the 2 cores),
# handed two tests at a time, the longest first (tests/conftest.py); the slowest 30 durations are printed.
TEST_WORKERS ?= 2
test: setup
	$(BIN)/python -m pytest -m 'not long' -n $(TEST_WORKERS) --maxschedchunk 2 --durations=30

# The full runs of claims make test checks by a short case (duration in the README).
test-long: setup
	$(BIN)/python -m pytest -m long

# The oldest (constraints-oldest.txt) and the newest (constraints.txt) supported Hypothesis and pytest, each
# in a throwaway venv with kconform's core install, on the tests that need no broker, Spark, TLC or extra.
# Editable, as `make setup` installs it: the tests run from the checkout, whose kconform/ folder would hide
# an installed copy's subpackages (the wheel's own install is tests/test_core_install.py's).
COMPAT_TESTS := tests/test_adapter_loading.py tests/test_assignment.py tests/test_cli.py tests/test_discovery.py \
  tests/test_kafka_model.py tests/test_kafka_strategies.py tests/test_plugin_isolation.py tests/test_profiles.py \
  tests/test_requirements.py tests/test_safety_apart.py
compat:
	@set -e; for pins in constraints-oldest.txt constraints.txt; do \
	  venv=$$(mktemp -d)/venv; trap 'rm -rf "$$(dirname "$$venv")"' EXIT; \
	  $(PYTHON) -m venv $$venv; \
	  $$venv/bin/python -m pip install --quiet -c $$pins -e .; \
	  echo "compat: $$($$venv/bin/python -m pip freeze | grep -E '^(hypothesis|pytest)==' | tr '\n' ' ')"; \
	  $$venv/bin/python -m pytest -q -p no:cacheprovider $(COMPAT_TESTS); \
	  rm -rf "$$(dirname "$$venv")"; \
	done

# The contributor's check before a commit: lint, types, and the tests that need no broker, Spark, TLC, JVM
# helper or wheel install, minus the mutant kills (slow), on the quick profile (duration in the README).
CHECK_TESTS := not integration and not spark and not flink and not tla and not jvm and not wheel and not slow
check: lint
	KCONFORM_PROFILE=quick $(BIN)/python -m pytest -q -p no:cacheprovider -m '$(CHECK_TESTS)'

spec: setup
	$(BIN)/kconform spec check --profile $(if $(filter thorough,$(PROFILE)),thorough,ci)

# The bug bank (kconform bugbank): each real bug of fixtures/bugbank.toml on its buggy and its fixed release,
# each resolved on demand and cached; writes docs/bugbank.md (duration in the README).
bugbank: setup
	$(BIN)/kconform bugbank --page docs/bugbank.md

# kconform bench (docs/bench.md): the speed figures, then the time to each verdict (--gate: the protocol and the
# pipeline level of make conformance, a Flink verdict page, the bug bank, each a real command timed from its start
# to its exit, with where its time went). The Spark races alone: kconform bench --skip-mutants --skip-brokers.
bench: setup
	$(BIN)/kconform bench --gate --gate-out $(REPORT)/bench-gate --json $(REPORT)/bench.json

# The time to each verdict alone; GATE_PARTS=protocol,pipeline and ONLY=DISC-001 (a test name or requirement id of
# the kconform run parts) make a short run, whose figures say they are not the goals' runs.
GATE_PARTS ?= protocol,pipeline,flink,bank
bench-gate: setup
	$(BIN)/kconform bench --skip-mutants --skip-brokers --skip-spark --gate-parts $(GATE_PARTS) \
	  $(if $(ONLY),--only $(ONLY)) --gate-out $(REPORT)/bench-gate --json $(REPORT)/bench-gate/bench.json

# Seeded fault soak on Apache Kafka (kconform soak): SCHEDULES, SEED, BROKER=kafka|kafka-cluster;
# failing schedules are saved under $(REPORT)/soak with their replay command.
SCHEDULES ?= 10
SEED ?= 1
soak: setup
	$(BIN)/kconform soak $(if $(ADAPTER),--adapter $(ADAPTER)) --schedules $(SCHEDULES) --seed $(SEED) \
	  --broker $(BROKER) --out $(REPORT)/soak

# The client workload's long draw (docs/workloads.md): 50 schedules of the confluent-kafka this venv imports, with
# faults on the broker the run starts (duration in docs/guide.md).
workload: setup
	$(BIN)/kconform run --level pipeline --only CLIENT --profile thorough --broker $(BROKER) --report $(REPORT)/workload

# The long soak: 100 schedules (duration measured in the README).
soak-long:
	$(MAKE) soak SCHEDULES=100

probe: setup
	$(BIN)/kconform probe-broker --broker $(BROKER)

# mypy names modules as they are imported (kconform.conformance...): it reads the folders through
# build/typecheck/kconform, a link to this checkout made here (never committed).
LINT_PATHS := reference_impl conformance tests fixtures spec kconform
lint: $(VENV)/.installed
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/ruff format --check $(LINT_PATHS)
	@mkdir -p build/typecheck && ln -sfn ../.. build/typecheck/kconform
	cd build/typecheck && $(abspath $(BIN))/mypy --config-file $(CURDIR)/pyproject.toml \
	  kconform/conformance kconform/reference_impl kconform/spec kconform/fixtures

docs: setup
	$(BIN)/kconform requirements --markdown > spec/REQUIREMENTS.md
	@echo "wrote spec/REQUIREMENTS.md"
	$(BIN)/kconform probe-broker --broker tansu --broker kafka --markdown --update spec/kafka.md

# The spec, docs and requirement table as a static site in build/site (mkdocs build --strict).
site: setup
	$(BIN)/kconform site --out build/site

# Regenerate the committed verdict tables of the shipped adapters (fixed seed: a clean clone gets the same):
# Spark's built-in connector on the pinned Spark, then in its real-time mode (REAL_TIME: one task slot per
# Kafka partition, hence local[8,3]), then on each of SPARK_RELEASES (kconform verdicts --spark),
# then Flink's own connector at its newest pinned line (conformance/flink/versions.py);
# a page's violation is its finding (exit 1 goes on), a run that could not check stops make.
SPARK_RELEASES := 3.5.7 4.0.2 4.0.4 4.1.1 4.1.2 4.1.3
# The broker releases other than the default that the pinned Spark's connector is also judged on (one page each);
# `kconform matrix` then writes docs/verdicts/matrix.md (connector release x broker release) from every page.
OTHER_KAFKA_VERSIONS ?= 3.9.2
verdicts: setup
	$(BIN)/kconform verdicts --adapter kconform.conformance.adapters.spark_kafka:ADAPTER \
	  --expectations conformance/adapters/spark_kafka.expectations.toml --out docs/verdicts/spark-kafka.md
	$(BIN)/kconform verdicts --adapter kconform.conformance.adapters.spark_kafka:REAL_TIME --spark-master 'local[8,3]' \
	  --expectations conformance/adapters/spark_kafka_real_time.expectations.toml \
	  --out docs/verdicts/spark-kafka-real-time.md; code=$$?; [ $$code -le 1 ] || exit $$code
	for release in $(SPARK_RELEASES); do \
	  $(BIN)/kconform verdicts --spark $$release --adapter kconform.conformance.adapters.spark_kafka:ADAPTER \
	    --expectations conformance/adapters/spark_kafka.expectations.toml \
	    --out docs/verdicts/spark-kafka-$$release.md; code=$$?; [ $$code -le 1 ] || exit $$code; \
	done
	for kafka in $(OTHER_KAFKA_VERSIONS); do \
	  $(BIN)/kconform verdicts --kafka-version $$kafka --adapter kconform.conformance.adapters.spark_kafka:ADAPTER \
	    --expectations conformance/adapters/spark_kafka.expectations.toml \
	    --out docs/verdicts/spark-kafka-on-kafka-$$kafka.md; code=$$?; [ $$code -le 1 ] || exit $$code; \
	done
	$(BIN)/kconform verdicts --adapter kconform.conformance.adapters.flink_kafka:adapter --out docs/verdicts/flink-kafka.md
	$(BIN)/kconform matrix

# The Flink harness tests (tests/flink) on every flink-connector-kafka release line pinned in
# conformance/flink/versions.py, each built with Maven on first use (duration in the README); `make test`
# runs them on the newest line alone. KCONFORM_FLINK_VERSIONS=3.2.0-1.19,4.0.1-2.0 picks lines by hand.
flink-versions: setup
	KCONFORM_FLINK_VERSIONS=all $(BIN)/python -m pytest -q -p no:cacheprovider tests/flink

# Mutation testing of the pure core (assignment, discovery, restore, commit) with the protocol suite as the
# test set (Cosmic Ray, one mutant at a time); writes docs/mutation.md. MODULES=discovery restricts it.
# mutation-report rewrites the doc from the last run after docs/mutation-triage.toml changed.
mutation: setup
	$(BIN)/python -m kconform.conformance.mutation $(if $(MODULES),--modules $(MODULES))

mutation-report: setup
	$(BIN)/python -m kconform.conformance.mutation --report-only $(if $(MODULES),--modules $(MODULES))

# Regenerate the golden vectors for kconform.reference_impl.assignment from Flink's own classes (FLIP-27's
# KafkaSourceEnumerator.getSplitOwner, checked against the legacy KafkaTopicPartitionAssigner) through
# the Flink oracle that `make setup` builds (jvm/flink-oracle).
golden: setup
	$(BIN)/python -m kconform.conformance.jvm.flink_oracle fixtures/golden/topics.txt fixtures/golden/assign_vectors.csv

clean:
	rm -rf $(VENV) $(JVM_DIR) .releases build .hypothesis .pytest_cache .mypy_cache .ruff_cache
