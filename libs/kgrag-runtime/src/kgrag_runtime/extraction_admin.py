"""Extraction administration: the ontology in force, re-extraction previews and runs, claims timelines.

One object behind the CLI (`kgrag ontology`, `kgrag extract`) and the admin HTTP endpoints, so both say the
same thing in the same words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import date

from kgrag_core.acl import Caller, readable_classes
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.extraction.claims import as_written_by
from kgrag_core.extraction.ontology import ontology_to_dict, parse_ontology
from kgrag_core.extraction.pipeline import Extractor
from kgrag_core.extraction.records import ClaimRecord, ExtractionRun, RerunScope
from kgrag_core.extraction.rerun import RerunService
from kgrag_core.ports import AclStore, ExtractionStore
from kgrag_runtime.extraction import install_ontology
from kgrag_runtime.single_writer import SingleWriter, shared_nothing, writes


@dataclass(slots=True)
class ExtractionAdmin:
    store: ExtractionStore
    acl: AclStore
    extractor: Extractor
    rerun_service: RerunService
    # Re-extraction and a new ontology change what ingestion writes: they take the writer gate.
    writer: SingleWriter = field(default_factory=shared_nothing)

    # --- ontology --------------------------------------------------------------------------------------

    def ontology(self) -> dict[str, object]:
        return {**ontology_to_dict(self.extractor.ontology), "versions": self.store.ontology_versions()}

    @writes
    def put_ontology(self, body: object) -> dict[str, object]:
        """Validate and activate a new ontology version; extractions from now on record it."""
        ontology = parse_ontology(body)
        created = install_ontology(self.store, ontology)
        self.extractor.use_ontology(ontology)
        return {"version": ontology.version, "created": created, "fingerprint": ontology.fingerprint}

    # --- re-extraction ----------------------------------------------------------------------------------

    @writes
    def rerun(self, scope: RerunScope, extractor_version: str, *, dry_run: bool) -> dict[str, object]:
        if not extractor_version.strip():
            raise KgragError(
                ErrorCode.INVALID_QUERY,
                "extractor_version must not be empty.",
                hint="Name the extractor version to re-extract with, e.g. 2.",
            )
        if dry_run:
            return run_as_dict(self.rerun_service.preview(scope, extractor_version))
        return run_as_dict(self.rerun_service.start(scope, extractor_version))

    @writes
    def resume(self, run_id: str) -> dict[str, object]:
        return run_as_dict(self.rerun_service.resume(run_id))

    def runs(self, limit: int = 20) -> list[dict[str, object]]:
        return [run_as_dict(r) for r in self.store.runs(limit)]

    def run(self, run_id: str) -> dict[str, object]:
        run = self.store.get_run(run_id)
        if run is None:
            raise KgragError(
                ErrorCode.RUN_NOT_FOUND,
                f"No re-extraction run {run_id!r}.",
                hint="Start one with `kgrag extract rerun` (without --dry-run).",
            )
        return run_as_dict(run)

    # --- facts -------------------------------------------------------------------------------------------

    def claims(
        self, caller: Caller, *, entity: str | None = None, attribute: str | None = None, as_of: str | None = None
    ) -> list[dict[str, object]]:
        """Claims the caller may see, oldest written first; `as_of` (YYYY-MM-DD) shows what the documents
        said on that day: later claims are left out and supersession is computed over the rest."""
        visible = None if caller.admin else readable_classes(self.acl.acl_classes(), caller)
        records = self.store.claims(entity=entity, attribute=attribute, acl_class_ids=visible)
        if as_of is not None:
            records = as_written_by(records, _day(as_of), self.extractor.ontology)
        return [claim_as_dict(r) for r in records]

    def status(self) -> dict[str, object]:
        facts = self.store.fact_counts()
        return {
            "ontology_version": self.extractor.ontology.version,
            "extractor_version": self.extractor.settings.extractor_version,
            "llm": self.extractor.llm is not None,
            "facts": facts,
            "quarantined": facts.get("quarantined", 0),  # counted in SQL, not by loading the replies
        }


def run_as_dict(run: ExtractionRun) -> dict[str, object]:
    out = asdict(run)
    out["scope"] = {k: list(v) for k, v in asdict(run.scope).items()}
    out["done_chunks"] = len(run.done_chunk_ids)
    del out["done_chunk_ids"]
    for key in ("created_at", "finished_at"):
        value = getattr(run, key)
        out[key] = value.isoformat() if value is not None else None
    if not run.preview.tokens_counted:
        out["note"] = "token counts are estimated (about 4 characters per token): set KGRAG_LLM_TOKENIZER_FILE"
    return out


def claim_as_dict(claim: ClaimRecord) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in asdict(claim).items():
        out[key] = value.isoformat() if hasattr(value, "isoformat") else value
    out["conflicts_with"] = list(claim.conflicts_with)
    out["tier"] = int(claim.tier)
    return out


def scope_from(body: Mapping[str, object]) -> RerunScope:
    def names(key: str) -> tuple[str, ...]:
        value = body.get(key) or []
        if isinstance(value, str) or not isinstance(value, Sequence) or not all(isinstance(v, str) for v in value):
            raise KgragError(
                ErrorCode.INVALID_QUERY,
                f"scope.{key} must be a list of strings.",
                hint='For example {"sources": ["incidents"]}.',
            )
        return tuple(str(v) for v in value)

    unknown = set(body) - {"doc_ids", "sources", "chunk_ids", "contains_any"}
    if unknown:
        raise KgragError(
            ErrorCode.INVALID_QUERY,
            f"Unknown scope field(s): {', '.join(sorted(unknown))}.",
            hint="A scope may name doc_ids, sources, chunk_ids and contains_any.",
        )
    return RerunScope(names("doc_ids"), names("sources"), names("chunk_ids"), names("contains_any"))


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError as err:
        raise KgragError(ErrorCode.INVALID_QUERY, f"{text!r} is not a date.", hint="Use YYYY-MM-DD.") from err
