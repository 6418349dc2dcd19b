"""Entity resolution (pure): normalisation, blocking, pairwise features, hard constraints, constrained
clustering and the resolver that turns mention-level entity profiles into a plan of merges, review pairs and
refusals. Seed 003 §4.3; seed 000 for the failures it guards against (alias chaining, pronoun and generic
aliases, namesakes, giant components)."""

from kgrag_core.resolution.blocking import Blocking, BlockingSettings, block_keys, candidate_pairs
from kgrag_core.resolution.clustering import ConstrainedUnionFind
from kgrag_core.resolution.constraints import AliasIndex, Rule, hard_stop
from kgrag_core.resolution.evaluation import (
    LabelledProfile,
    ResolutionScores,
    parse_labelled_profiles,
    score_resolution,
    scores_table,
)
from kgrag_core.resolution.features import FeatureWeights, name_similarity
from kgrag_core.resolution.normalise import (
    is_generic_one_word,
    is_pronoun,
    matching_key,
    name_tokens,
    normalise_entity_name,
    phonetic_key,
)
from kgrag_core.resolution.resolver import (
    Overrides,
    ResolutionPlan,
    ResolutionStats,
    Resolver,
    ResolverSettings,
    canonical_member,
    parse_overrides,
)

__all__ = [
    "AliasIndex",
    "Blocking",
    "BlockingSettings",
    "ConstrainedUnionFind",
    "FeatureWeights",
    "LabelledProfile",
    "Overrides",
    "ResolutionPlan",
    "ResolutionScores",
    "ResolutionStats",
    "Resolver",
    "ResolverSettings",
    "Rule",
    "block_keys",
    "candidate_pairs",
    "canonical_member",
    "hard_stop",
    "is_generic_one_word",
    "is_pronoun",
    "matching_key",
    "name_similarity",
    "name_tokens",
    "normalise_entity_name",
    "parse_labelled_profiles",
    "parse_overrides",
    "phonetic_key",
    "score_resolution",
    "scores_table",
]
