"""Structure-aware chunking: Markdown/plain text → byte spans with heading breadcrumbs."""

from kgrag_core.chunking.lines import front_matter_span
from kgrag_core.chunking.markdown import chunk_document
from kgrag_core.chunking.tokens import estimate_tokens

__all__ = ["chunk_document", "estimate_tokens", "front_matter_span"]
