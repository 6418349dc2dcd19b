"""Answering: extractive answers, LLM answers with verified quotes, citations."""
