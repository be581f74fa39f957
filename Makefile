# dbbench developer commands. `make help` lists them.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV ?= .venv
# Apache Otava: the results service's change-point detection (docs/decisions.md).
OTAVA := apache-otava==0.8.0
PY := $(VENV)/bin/python
TOOLS_DIR ?= $(CURDIR)/.tools
export PATH := $(TOOLS_DIR)/bin:$(CURDIR)/$(VENV)/bin:$(PATH)
PYTEST_ARGS ?=
# `make test` runs the suite on this many pytest-xdist workers: most of its time
# is spent waiting for real servers, so more workers than cores pay off (six
# measured best on 2 cores: docs/testing.md, ninth look).
TEST_WORKERS ?= 6
PY_SOURCES := operator runner-image client tests hack
# Python keeps its bytecode cache (__pycache__/, ignored by git, helm, the image
# builds and their digests) for everything started from here: with
# PYTHONDONTWRITEBYTECODE set (the development machine sets it) no cache was ever
# written, so every Python process compiled the repository's modules again (each
# pytest worker, each runner and its fork server, each CLI a test starts) and pytest
# rewrote every test module again: `pytest --collect-only` took 10.1 s of CPU
# instead of 5.4 (docs/testing.md, "Cut next (third round)").
unexport PYTHONDONTWRITEBYTECODE

.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

$(VENV)/.installed: pyproject.toml Makefile
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@# Otava's analysis alone (numpy + scipy, above); its CLI's dependencies stay out.
	$(PY) -m pip install --quiet --no-deps $(OTAVA)
	touch $@

.PHONY: venv
venv: $(VENV)/.installed ## Create the Python virtualenv with pinned dependencies

.PHONY: tools
tools: ## Build/install kube binaries, helm, etcd, MariaDB, sysbench, PostgreSQL, a MySQL root, FerretDB into .tools (idempotent)
	TOOLS_DIR=$(TOOLS_DIR) bash hack/tools.sh

.PHONY: crd
crd: venv ## Regenerate crds/ from the pydantic model
	$(PY) hack/gen_crd.py

.PHONY: lint
lint: venv ## ruff, import contracts, CRD freshness, helm lint
	$(VENV)/bin/ruff check $(PY_SOURCES)
	$(VENV)/bin/ruff format --check $(PY_SOURCES)
	$(VENV)/bin/lint-imports
	$(PY) hack/gen_crd.py --check
	@command -v helm >/dev/null || { echo "helm not found: run 'make tools'"; exit 1; }
	helm lint --strict --quiet .
	@# The topology charts need the credentials Secret the operator creates per run.
	for chart in charts/mongodb charts/mysql charts/postgresql; do \
		helm lint --strict --quiet --set auth.existingSecret=lint $$chart || exit 1; done

.PHONY: typecheck
typecheck: venv ## mypy --strict on both packages
	$(VENV)/bin/mypy --strict runner-image/dbbench_contract operator/dbbench_operator runner-image/dbbench_runner runner-image/dbbench_results runner-image/dbbench_report client/dbbench_cli hack/dbbench_local hack/dbbench_scale hack/reproduce.py

# The operator's integration tests, with the children's watches off: every run
# on its timer alone (reconcile.events: false), the fallback's proof.
OPERATOR_TESTS := tests/integration/operator/test_operator_lifecycle.py tests/integration/operator/test_run_children.py tests/integration/operator/test_startup_waits.py tests/integration/operator/test_operator_field_effects.py tests/integration/operator/test_admission_index.py tests/unit/operator/controller/test_run_loop.py tests/integration/operator/test_failed_step_run.py tests/integration/operator/test_expectations_run.py

.PHONY: test-timer
test-timer: tools venv ## The operator's integration tests with events off (the timer alone)
	DBBENCH_EVENTS=false $(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup $(OPERATOR_TESTS) $(PYTEST_ARGS)

.PHONY: unit
unit: venv ## Fast tests of pure code only: tests/unit/ (the layout: tests/support/layout.py)
	$(PY) -m pytest -m "not integration and not e2e" $(PYTEST_ARGS)

.PHONY: test
test: tools venv ## THE test command: set up everything, then lint, typecheck and run all tests
	$(MAKE) --no-print-directory lint typecheck
	$(PY) -m pytest -m "not e2e" -n $(TEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

.PHONY: bench
bench: tools venv ## Runner vs sysbench (MariaDB) and pgbench (PostgreSQL) on local servers; prints figures and ratios
	$(PY) hack/bench/bench_runner.py

.PHONY: scale
scale: tools venv ## The operator at scale: own control plane + kwok, 100 nodes, 1,000 runs; prints figures and goals
	TOOLS_DIR=$(TOOLS_DIR) bash hack/tools.sh kwok
	$(PY) hack/scale.py

.PHONY: cluster-tools
cluster-tools: tools ## Local node: containerd, runc, CNI, podman, debootstrap (Debian), CoreDNS, local-path (Go); kind with an engine
	TOOLS_DIR=$(TOOLS_DIR) bash hack/cluster-tools.sh

.PHONY: images
images: cluster-tools venv ## Build the images: archives in .cluster/images (local node, kind on podman: + its node image) or docker images (kind on Docker)
	recipe=$$($(PY) hack/cluster.py images-recipe) && case "$$recipe" in \
	  kind-docker) bash hack/cluster/kind-images.sh ;; \
	  kind-podman) TOOLS_DIR=$(TOOLS_DIR) bash hack/cluster/images.sh && \
	    TOOLS_DIR=$(TOOLS_DIR) bash hack/cluster/kind-node-image.sh ;; \
	  *) TOOLS_DIR=$(TOOLS_DIR) bash hack/cluster/images.sh ;; \
	esac

.PHONY: setup
setup: ## tools, cluster-tools, venv and images at once: the slow first-time parts overlap (CI)
	TOOLS_DIR=$(TOOLS_DIR) bash hack/setup.sh

.PHONY: free-build-caches
free-build-caches: ## After setup on a throwaway machine (CI): delete Go, pip and apt download/build caches (GBs)
	-command -v go >/dev/null && go clean -cache -modcache
	-$(PY) -m pip cache purge >/dev/null 2>&1
	-command -v apt-get >/dev/null && apt-get clean
	df -h . /tmp

.PHONY: cluster-up
cluster-up: images venv ## Start the real single-node cluster (root), or kind (DBBENCH_CLUSTER=kind, DBBENCH_NODES=N nodes); prints `export KUBECONFIG=...`
	$(PY) hack/cluster.py up

.PHONY: cluster-down
cluster-down: venv ## Stop every process of the local cluster by PID, unmount, remove its state
	$(PY) hack/cluster.py down

# `make e2e` runs the tests not marked `disruptive` on this many pytest-xdist
# workers against the one node, then the disruptive ones alone (docs/testing.md).
# Each worker's runs keep to 1/E2E_WORKERS of the node (tests/e2e/sharing.py).
E2E_WORKERS ?= 4

.PHONY: e2e
e2e: cluster-up ## End-to-end runs on the local cluster: concurrent tests, then disruptive ones alone
	E2E_WORKERS=$(E2E_WORKERS) $(PY) -m dbbench_local.e2e $(PYTEST_ARGS)

# The placement suite's cluster: kind with a control plane and the pools runners,
# db-small, db-large (hack/dbbench_local/kind_pools.py; docs/testing.md).
PLACEMENT_NODES ?= 4

.PHONY: e2e-placement
e2e-placement: ## Placement on node pools (tests/e2e/test_node_pools.py) on a kind cluster of DBBENCH_NODES=4 nodes; skipped by a one-node `make e2e`
	DBBENCH_CLUSTER=kind DBBENCH_NODES=$(PLACEMENT_NODES) $(MAKE) --no-print-directory cluster-up
	DBBENCH_CLUSTER=kind $(PY) -m pytest -v --durations=0 -m "e2e and placement" -n 0 \
	  tests/e2e/test_node_pools.py $(PYTEST_ARGS)

.PHONY: setup-demo
setup-demo: ## What `make demo` needs and no more (its first step), the slow parts overlapped as in setup
	DBBENCH_BUILD=demo TOOLS_DIR=$(TOOLS_DIR) bash hack/setup.sh

# DBBENCH_BUILD=demo reaches the prerequisites' recipes too (tools, images):
# from nothing, the demo builds only what the quickstart runs (docs/local-cluster.md).
.PHONY: demo
demo: export DBBENCH_BUILD = demo
demo: setup-demo cluster-up ## THE main command: local cluster, chart, examples/quickstart.yaml, summary table
	$(PY) hack/demo.py

# Not part of `make test`: it holds the node for about 45 minutes.
.PHONY: reproduce
reproduce: cluster-up ## Field benchmarks' small variants on the local cluster, one after another; table in build/reproductions-table.md
	$(PY) hack/reproduce.py $(REPRODUCE_ARGS)

.PHONY: demo-kind
demo-kind: ## `make demo` on kind (through podman where no Docker engine answers)
	DBBENCH_CLUSTER=kind $(MAKE) --no-print-directory demo

.PHONY: e2e-kind
e2e-kind: ## `make e2e` on kind (through podman where no Docker engine answers)
	DBBENCH_CLUSTER=kind $(MAKE) --no-print-directory e2e

.PHONY: clean
clean: ## Remove the virtualenv and caches (keeps .tools)
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
