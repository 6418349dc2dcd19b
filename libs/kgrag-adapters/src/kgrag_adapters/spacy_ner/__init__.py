"""Tier 2's mention recognizer on spaCy."""

from kgrag_adapters.spacy_ner.recognizer import SpacyRecognizer

__all__ = ["SpacyRecognizer"]
