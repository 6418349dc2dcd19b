"""Evaluation: question sets, retrieval and answer metrics, significance tests."""
