# kgrag — the two commands that matter: `make demo` and `make test`.
SHELL := /bin/bash
UV := $(shell command -v uv 2>/dev/null || echo "python3 -m uv")
UV_VERSION := 0.13.9
DEMO_DIR ?= .kgrag-demo
RUN := $(UV) run --frozen

.PHONY: install demo test lint typecheck services browser services-stop stack stack-stop eval eval-graph bench bench-distributed bench-scale serve clean

# --quiet: `make demo` shows the demo, not the list of every installed package; errors still print.
install:  ## Create .venv and install every workspace package from uv.lock
	@command -v uv >/dev/null 2>&1 || python3 -m uv --version >/dev/null 2>&1 || python3 -m pip install -q "uv==$(UV_VERSION)"
	$(UV) sync --all-packages --frozen --compile-bytecode --quiet

demo: install  ## Ingest the bundled corpus and print cited answers (embedded default, no servers)
	bash scripts/demo.sh "$(DEMO_DIR)"

lint: install
	$(RUN) ruff check libs services tests corpora
	$(RUN) ruff format --check libs services tests corpora

typecheck: install
	$(RUN) mypy

services:  ## Fetch (cached) and start Kafka, Neo4j, OpenSearch, PostgreSQL, Redis and S3 on 127.0.0.1
	bash scripts/dev-services/services.sh start

browser:  ## Debian's Chromium for the browser tests (installed when missing)
	bash scripts/browser.sh

services-stop:
	bash scripts/dev-services/services.sh stop

stack: install  ## The eight distributed services as separate processes on this machine, against the dev servers (docs/operations.md)
	bash scripts/stack/stack.sh start

stack-stop:  ## Stop what `make stack` started (every process of every service)
	bash scripts/stack/stack.sh stop

test: lint typecheck services browser  ## Lint, strict types, corpus check, then every test (unit, contract, pipeline, integration, deploy, browser)
	$(RUN) python corpora/northwind/check_corpus.py
	set -a && . .cache/dev-services/env.sh && set +a && $(RUN) pytest

eval: install  ## Retrieval/answer quality per question type, extraction P/R per tier
	$(RUN) kgrag eval corpora/northwind/questions.jsonl --corpus corpora/northwind/documents.jsonl --data-dir .kgrag-eval
	$(RUN) kgrag eval --extraction-gold corpora/northwind/extraction --corpus corpora/northwind/documents.jsonl \
		--corpus corpora/northwind/records.jsonl

eval-graph: install  ## The graph layer on a prose-level graph: tier 3 reads every chunk from the bundled reply book
	$(RUN) kgrag eval corpora/northwind/questions.jsonl --corpus corpora/northwind/documents.jsonl \
		--reply-book corpora/northwind/extraction/corpus_replies.jsonl --data-dir .kgrag-eval-graph

bench: install  ## Benchmarks (tables with same-run baselines) into bench-results/
	$(RUN) kgrag bench --sizes 10000,100000 --out bench-results
	$(RUN) python -m kgrag_runtime.benchmarks.ingest --docs 2000 --out bench-results/ingest
	$(RUN) python -m kgrag_runtime.benchmarks.multihop --out bench-results/multihop
	$(RUN) python -m kgrag_runtime.benchmarks.load --out bench-results/load
	$(RUN) python -m kgrag_runtime.benchmarks.answers --chunks 10000 --queries 30 --out bench-results/answers
	$(RUN) kgrag ingest corpora/northwind/documents.jsonl --data-dir .kgrag-bench-cli
	$(RUN) python -m kgrag_runtime.benchmarks.cli_startup --data-dir .kgrag-bench-cli --out bench-results/cli
	$(RUN) python -m kgrag_runtime.benchmarks.connectors --runs 20 --out bench-results/connectors
	$(RUN) python -m kgrag_runtime.benchmarks.communities --sizes 10000,100000 --out bench-results/communities
	$(RUN) python -m kgrag_runtime.benchmarks.global_scale --sizes 10000,100000 --out bench-results/global-scale

bench-distributed: install services  ## Freshness under load, 1 vs 2 replicas, Neo4j vs PostgreSQL traversal, community projection sync on the real servers
	$(RUN) python -m kgrag_runtime.benchmarks.distributed --docs 200 --rate 5 --replicas 1,2 --out bench-results/distributed
	$(RUN) python -m kgrag_runtime.benchmarks.graph_stores --entities 100000 --out bench-results/graph-stores
	$(RUN) python -m kgrag_runtime.benchmarks.graph_reads --sizes 10000,100000 --out bench-results/graph-reads
	$(RUN) python -m kgrag_runtime.benchmarks.graph_projections --entities 100000 --out bench-results/graph-projections

bench-scale: install  ## Search at 100k and 1M chunks on the embedded stores (docs/benchmarks.md, section 10; an hour or more)
	$(RUN) python -m kgrag_runtime.benchmarks.scale --chunks 100000 --out bench-results/scale
	$(RUN) python -m kgrag_runtime.benchmarks.scale --chunks 1000000 --index-only --optimize-every 1000000 --pool 512 --out bench-results/scale

serve: install  ## HTTP API with OpenAPI docs at http://127.0.0.1:8000/docs
	$(RUN) kgrag serve --data-dir $(DEMO_DIR)

clean:
	rm -rf .kgrag .kgrag-demo .kgrag-eval .kgrag-bench-cli bench-results .pytest_cache .mypy_cache .ruff_cache
