"""The text graph's shapes: mentions found in a passage, the edges they become, and the walk's settings."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple


class MentionKind(StrEnum):
    ENTITY = "entity"  # a named entity (NER)
    PHRASE = "phrase"  # a noun phrase
    TITLE = "title"  # another document's title named in the passage (or the passage's own)
    LINK = "link"  # a wikilink or hyperlink target


@dataclass(frozen=True, slots=True)
class Mention:
    """A phrase a passage names; `text` as written, `kind` what found it."""

    text: str
    kind: MentionKind


@dataclass(frozen=True, slots=True)
class Passage:
    """One chunk as the builder sees it: its text, its document's title and its ACL class."""

    chunk_id: str
    doc_id: str
    acl_class_id: str
    title: str
    text: str


@dataclass(frozen=True, slots=True)
class MentionEdge:
    """Passage `chunk_id` names node `node_key` (a blind index of the normalised phrase, never the phrase).

    `weight` is the mention's salience in its passage; the walk multiplies it by the node's specificity
    (IDF-like, over the passages the caller can read). The edge keeps its evidence chunk and ACL class, so a
    walk uses only edges from chunks the caller can read."""

    chunk_id: str
    doc_id: str
    acl_class_id: str
    node_key: str
    kind: MentionKind
    weight: float = 1.0


@dataclass(frozen=True, slots=True)
class SynonymEdge:
    """Two nodes naming the same thing (a loose normal form, or name embeddings above the threshold); the
    chunk whose new name created it is its evidence, so it goes with that chunk."""

    node_a: str
    node_b: str
    chunk_id: str
    acl_class_id: str
    similarity: float


class WalkEdge(NamedTuple):
    """One edge of the caller-visible neighbourhood, as the store returns it for a walk (a named tuple: a
    walk loads thousands, and a frozen dataclass costs several times more to build)."""

    chunk_id: str
    node_key: str
    df: int  # passages the caller can read that name the node
    kind: MentionKind = MentionKind.PHRASE
    weight: float = 1.0  # the mention's salience; the searcher multiplies in the specificity from `df`


@dataclass(frozen=True, slots=True)
class TextGraphSettings:
    # Question kinds (the router's) the walk runs for; the others stay hybrid. Bundled dev split, recall@5
    # hybrid -> walk: multi_hop 0.593 -> 0.683, entity 0.608 -> 0.600, global 0.265 -> 0.223, temporal and
    # modality unchanged; lookups are hybrid's by design.
    kinds: tuple[str, ...] = ("multi_hop", "entity")
    # Salience of a mention by kind: a name or a link says more about a passage than a common noun phrase.
    phrase_weight: float = 0.5
    # A phrase named by more than this share of passages connects nothing useful ("company", "2023").
    max_passage_share: float = 0.05
    # ... but in a tiny corpus every phrase is in 5 %: at least this many passages are always allowed.
    min_passage_cap: int = 3
    max_phrase_words: int = 6
    min_phrase_chars: int = 3
    # Name embeddings at or above this cosine are synonyms. MiniLM: "kestrel pharma" ~ "kestrel
    # pharmaceuticals" 0.90; "priya raman" ~ "priya" 0.81 and "acme" ~ "acme corporation" 0.82 stay apart.
    synonym_threshold: float = 0.88
    # The walk
    damping: float = 0.5  # restart probability 1 - damping at every step (HippoRAG uses 0.5)
    iterations: int = 30
    tolerance: float = 1e-6
    max_nodes: int = 20_000  # edges loaded for one walk are bounded by this many (node + passage) ids
    # Multi-hop dev split: 50,000 edges / 30 candidates / 4 bridges -> 4,000 / 15 / 3 kept recall@5 (0.54) and
    # cut the unrouted walk's p95 from 1.75 s to 1.21 s (2026-12-02, loaded machine).
    max_edges: int = 4_000
    seed_passages: int = 5  # hybrid's best passages whose nodes also seed the walk
    seed_passage_weight: float = 0.5
    bridge_passages: int = 3  # first-hop passages whose new names become second-hop queries
    max_bridges: int = 3
    bridge_candidates: int = 10  # hits a second-hop query adds
    walk_candidates: int = 15  # passages the walk offers to the fusion
    pool: int = 50  # hybrid hits used as the dense/BM25 side
    # Route weights of the fusion: the walk and the bridges weigh less than hybrid's routes, so a passage
    # only they found does not outrank a direct top match.
    walk_weight: float = 0.7
    bridge_weight: float = 0.5
    # Second hops (query-time bridging): each bridge's best passage takes one of the last `bridge_slots` of the
    # first `bridge_top` places (never hybrid's `keep_head`); the hop query adds what the question asks.
    bridge_slots: int = 2
    bridge_top: int = 5
    bridge_context: bool = True
    bridge_mode: str = "bm25"
    # Further hops (3- and 4-passage chains): from the best second-hop passage, the names it adds are hop
    # queries too, and the best-scoring one's passage is the next hop, up to `max_hops` passages in all and no
    # more than the question's relations ask for (`hops.chain_length`); 2 = second hops only. At most
    # `hop_names` BM25 queries per further hop, within `hop_budget_s`; the chain's passages follow the first
    # `chain_first` bridged passages in the bridged slots (0: after all of them). Dev split (2026-12-02,
    # docs/benchmarks.md section 11): 3 with `chain_from="top"` and `chain_max_df=1` lifted recall@5 of the
    # 3-hop chains 0.383 -> 0.420 and the 4-hop 0.300 -> 0.312 (4 wins, no loss); 4 added nothing over 3, and
    # chains that start on a guess (no limit on the names' passages) lost as many questions as they won.
    max_hops: int = 3
    hop_names: int = 3
    hop_budget_s: float = 0.15
    chain_first: int = 1
    # Bridged slots more for a chain's further-hop passages (at most one a hop; `place_bridged` keeps them
    # after `keep_head`), so a chain passage does not push the second bridge's out of the first five.
    chain_slots: int = 0
    # Bridges in order of "specificity" (rarest name first) or of "rank": the names of hybrid's best first-hop
    # passage first (rarest first within a passage), and the further hops start from the first bridge's hop.
    bridge_order: str = "specificity"
    # "Are the employers of X and Y based in the same city?" takes the bridged slots too (`hops.paired_bridge`).
    pair_bridges: bool = False
    # Where the further hops start: the "best" second-hop passage, or the best of those whose bridge the
    # first hop's best passage names ("top", which then leads the bridged slots).
    chain_from: str = "top"
    # Further hops only when a node of the question (a name, or a word run of one) is named by at most this
    # many visible passages (a quoted title names its work's passage; a person's name all of that person's):
    # 0 = always.
    chain_max_df: int = 1
    # Bridge-shaped questions (a named entity, an attribute of a related one) walk whatever the router says.
    route_bridges: bool = True
    keep_head: int = 2  # hybrid's first hits keep their places (the first hop is what direct retrieval finds)
    timeout_s: float = 1.0
