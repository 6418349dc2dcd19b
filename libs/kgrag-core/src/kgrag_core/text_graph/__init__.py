"""The text graph (issue 13): passages linked through the entities, noun phrases, titles and links they name.

Built with NLP only (no model), maintained with ingest, walked by personalized PageRank seeded from the
question, and fused with hybrid search by weighted RRF. Pure logic; the store and the phrase extractor are
ports (`kgrag_core.text_graph.ports`).
"""
