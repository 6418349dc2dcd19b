"""What the text graph needs from the outside: a phrase extractor and an authoritative store."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from kgrag_core.text_graph.model import Mention, MentionEdge, SynonymEdge, WalkEdge


@runtime_checkable
class PhraseExtractor(Protocol):
    """Entities, noun phrases and link targets of each text (spaCy in the adapters; patterns in the core)."""

    @property
    def version(self) -> str: ...

    def extract(self, texts: Sequence[str]) -> list[list[Mention]]: ...


@dataclass(frozen=True, slots=True)
class NewName:
    """A name first seen now: its node, its words (as the store blinds them), its vector and the chunk
    that brought it (the evidence of any synonym edge it makes)."""

    node_key: str
    words: tuple[str, ...]
    vector: tuple[float, ...]
    chunk_id: str
    doc_id: str


@dataclass(frozen=True, slots=True)
class Neighbourhood:
    """The caller-visible edges around the seeds, with each node's visible passage count (`df`) and the
    number of passages the caller can read (`passages`): specificity is computed over what the caller sees,
    so a document the caller cannot read changes nothing in their walk, not even a weight."""

    edges: tuple[WalkEdge, ...]
    passages: int
    truncated: bool = False


@runtime_checkable
class TextGraphStore(Protocol):
    def node_keys(self, phrases: Sequence[str]) -> dict[str, str]:
        """The blind index (node key) of each normalised phrase: nodes store no phrase (ADR 0008)."""
        ...

    def replace_document(
        self,
        doc_id: str,
        edges: Sequence[MentionEdge],
        *,
        titled: Sequence[str] = (),
    ) -> list[str]:
        """The document's passage-mention edges become exactly `edges` (`titled`: nodes that are its title);
        returns the node keys new to the whole graph (what is computed per name is computed for them only)."""
        ...

    def replace_documents(
        self, documents: Sequence[tuple[str, Sequence[MentionEdge], Sequence[str]]]
    ) -> list[list[str]]:
        """`replace_document` for each (doc_id, edges, titled), in order, in one transaction; per document the
        node keys new to the graph (a node new in the batch is new to the first document that has it)."""
        ...

    def titled(self, node_keys: Sequence[str]) -> set[str]:
        """Which of these nodes are some document's title."""
        ...

    def delete_document(self, doc_id: str) -> None: ...

    def similar_names(self, names: Sequence[NewName], threshold: float) -> list[tuple[str, str, float]]:
        """Keep the new names' vectors; return (new node, existing node, cosine) for every stored name that
        shares a word with a new one and whose vector is at least `threshold` similar."""
        ...

    def add_synonyms(self, synonyms: Sequence[SynonymEdge]) -> None: ...

    def neighbourhood(
        self,
        node_keys: Sequence[str],
        chunk_ids: Sequence[str],
        allowed: Sequence[str],
        *,
        max_share: float,
        min_cap: int,
        max_edges: int,
    ) -> Neighbourhood:
        """Edges (from chunks of `allowed` ACL classes only, checked in SQL) of the seed nodes and passages,
        of their passages' nodes, and of those nodes' passages: two hops, bounded by `max_edges`. Nodes whose
        visible passage count exceeds max(min_cap, max_share * passages) are left out."""
        ...
