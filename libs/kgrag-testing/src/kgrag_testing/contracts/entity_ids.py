"""The entity-id key the contract suites' stores use, so a suite can name the entities it expects.

Entity ids are keyed by a per-installation secret (`kgrag_core.extraction.identity.entity_id`); a suite's
fixture store adopts this key (`PostgresExtractionStore.use_entity_id_key`) before anything is stored. Never
a production key: it is public, which is exactly what an installation's key must not be.
"""

from __future__ import annotations

from collections.abc import Sequence

from kgrag_core.extraction.identity import entity_id

CONTRACT_ENTITY_KEY = b"kgrag-contract-suite-entity-id-key"


def contract_entity_id(entity_type: str, name: str, strong_ids: Sequence[tuple[str, str]] = ()) -> str:
    return entity_id(entity_type, name, strong_ids, key=CONTRACT_ENTITY_KEY)
