"""`kgrag bench`: throughput and latency tables with same-run baselines."""
