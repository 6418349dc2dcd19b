"""`python -m kgrag_runtime.cli` — the same as the `kgrag` command."""

from kgrag_runtime.cli.app import main

main()
