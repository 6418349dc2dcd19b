#!/usr/bin/env bash
# Ingest the bundled Northwind corpus into an embedded index and ask it a few questions.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA_DIR="${1:-.kgrag-demo}"
export KGRAG_DATA_DIR="$DATA_DIR"
KG=(uv run --frozen kgrag)
command -v uv >/dev/null 2>&1 || KG=(python3 -m uv run --frozen kgrag)

"${KG[@]}" ingest corpora/northwind/documents.jsonl
echo
echo "== As an engineer (group: engineering) =="
"${KG[@]}" ask "Who is the current on-call owner of Atlas?" --principal sam.ortiz --group engineering
"${KG[@]}" ask "Did Beacon move to CockroachDB?" --principal sam.ortiz --group engineering
echo "== Anonymous (public documents only) =="
"${KG[@]}" ask "What is the acquisition code name?"
echo "== Search =="
"${KG[@]}" search "Leipzig warehouse capacity pallet positions" --top-k 3 --admin
echo "== Facts: structured records + what the text says, each with its evidence =="
"${KG[@]}" ingest corpora/northwind/records.jsonl
"${KG[@]}" claims LEJ-2 --attribute capacity_pallets --admin
"${KG[@]}" search "Who is on call for Atlas now?" --graph --top-k 3 --principal sam.ortiz --group engineering
echo
echo "== Web app =="
echo "Run: ${KG[*]} serve --data-dir $DATA_DIR"
echo "then open http://127.0.0.1:8000/ui and paste the admin token it prints (docs/web-app.md)."
