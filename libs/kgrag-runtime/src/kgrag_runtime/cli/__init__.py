"""The `kgrag` command line."""
