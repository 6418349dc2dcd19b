"""A learned question router: multinomial logistic regression over the question's embedding and a few cues.

The rule router (`router.py`) is a pattern list fitted to the bundled questions; this one learns from a
question set written for it (`corpora/router/questions.jsonl`: many phrasings per kind, none from an eval
file), so it answers by what a question means rather than by which words it happens to use. Its inputs
are the embedding model's query vector plus cues the vector blurs: time expressions ("now", "since
2023", a year), a yes/no opening, plan words, corpus-wide words, a relative clause and how many names the
question carries. Training is deterministic (zero start, full-batch gradient descent, fixed steps), so
one training file and one embedding model always give one model, named by `version`.

When the likeliest kind is below `low_confidence`, the route carries the runner-up as `alternative`
and the graph searcher runs both strategies and fuses them.

Training embeds every example, which costs seconds at start-up; so a fitted model can be shipped
(`FittedRouter`, serialised by `dump_fitted`/`parse_fitted`) and is used only when its version equals the
router's, i.e. it was fitted from these very examples, this embedding model, these steps and these cues.
Any other set (a custom training file, another model) trains as before.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.graph_retrieval.router import QuestionKind, Route
from kgrag_core.ports import Embedder

Matrix = npt.NDArray[np.float64]

ROUTED_KINDS = tuple(QuestionKind)
LOW_CONFIDENCE = 0.5  # below this probability the runner-up strategy also runs
_STEPS = 400
_LEARNING_RATE = 0.5
_L2 = 1e-3

_CUES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, re.IGNORECASE))
    for name, pattern in (
        ("now", r"\b(?:current(?:ly)?|now|latest|today|still|these\s+days|at\s+(?:the\s+moment|present|this\s+point)|"
         r"most\s+recent|newest|up-to-date|as\s+of|any\s?more|present)\b"),
        ("change", r"\b(?:chang\w*|since|used\s+to|before|evolv\w*|over\s+time|previous(?:ly)?|until\s+when|"
         r"updated|took\s+over|renew\w*|replaced?)\b"),
        ("year", r"\b(?:19|20)\d\d\b"),
        ("month", r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b|\bq[1-4]\b|\bquarter\b"),
        ("yes/no", r"^\s*(?:did|was|were|has|have|is|are|will|does|do)\b"),
        ("plan", r"\b(?:plan\w*|propos\w*|pilot|trial|rfc|approv\w*|decided|go\s+ahead|carried\s+out|actually|"
         r"really|ever|idea|intend\w*|commit\w*)\b"),
        ("global", r"\b(?:across|overall|themes?|recurring|patterns?|summar\w*|trends?|common(?:ly)?|in\s+general|"
         r"most\s+often|typical|categories|all\s+(?:our|the))\b"),
        ("relative", r"\w\s+(?:that|who|whose|which|where)\s+\w"),
        ("chained", r",\s*and\s+(?:who|which|what|until|where|how)\b|:\s*(?:which|who)\b"),
        ("describe", r"^\s*(?:who\s+is|what\s+is|tell\s+me|describe|give\s+me\s+(?:a|an|the)\s+\w*\s*"
         r"(?:profile|overview|bio)|explain|profile|everything|background)\b"),
    )
)  # fmt: skip
_NAME = re.compile(r"(?<![.?!]\s)(?<!^)\b[A-ZÀ-Þ][\w\-]+")


def cue_vector(question: str) -> list[float]:
    """The hand cues, in `_CUES` order, then the count of capitalised names after the first word (capped)."""
    values = [1.0 if pattern.search(question) else 0.0 for _, pattern in _CUES]
    values.append(min(3.0, float(len(_NAME.findall(question.strip())))) / 3.0)
    return values


def cues_fired(question: str) -> tuple[str, ...]:
    return tuple(f"cue:{name}" for name, pattern in _CUES if pattern.search(question))


@dataclass(frozen=True, slots=True)
class RouterExample:
    question: str
    kind: QuestionKind


def parse_router_examples(lines: Sequence[str]) -> list[RouterExample]:
    """The router set's JSONL: {"id", "question", "kind"} per line; bad lines name their number."""
    out: list[RouterExample] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as err:
            raise KgragError(ErrorCode.MALFORMED_JSON, f"router set line {number}: {err.msg}") from err
        try:
            out.append(RouterExample(str(raw["question"]), QuestionKind(str(raw["kind"]))))
        except (KeyError, TypeError, ValueError) as err:
            raise KgragError(ErrorCode.MISSING_FIELD, f"router set line {number}: {err}") from err
    kinds = {e.kind for e in out}
    if kinds != set(ROUTED_KINDS):
        missing = ", ".join(sorted(k.value for k in set(ROUTED_KINDS) - kinds))
        raise KgragError(ErrorCode.MISSING_FIELD, f"router set has no example of: {missing}")
    return out


@dataclass(frozen=True, slots=True)
class _Model:
    weights: Matrix  # (features + 1) x kinds, the last row the bias
    mean: Matrix
    scale: Matrix


@dataclass(frozen=True, slots=True)
class FittedRouter:
    """A trained model with the version of the router that trained it (examples, model, steps, cues)."""

    version: str
    model: _Model


_FITTED_DIGITS = 12  # significant digits kept in the file: far below any probability the route reads


def dump_fitted(fitted: FittedRouter) -> str:
    """JSON of a fitted model, kinds named, so a reordered `QuestionKind` cannot silently permute columns."""
    m = fitted.model

    def rounded(values: Matrix) -> list[object]:
        return (
            [float(f"{v:.{_FITTED_DIGITS}g}") for v in values.tolist()]
            if values.ndim == 1
            else [rounded(row) for row in values]
        )

    body = {
        "version": fitted.version,
        "kinds": [k.value for k in ROUTED_KINDS],
        "mean": rounded(m.mean),
        "scale": rounded(m.scale),
        "weights": rounded(m.weights),
    }
    return json.dumps(body, separators=(",", ":")) + "\n"


def parse_fitted(text: str) -> FittedRouter:
    """The inverse of `dump_fitted`; a file that does not fit the routed kinds or its own shapes is refused."""
    try:
        raw = json.loads(text)
        kinds = [str(k) for k in raw["kinds"]]
        mean = np.asarray(raw["mean"], dtype=np.float64)
        scale = np.asarray(raw["scale"], dtype=np.float64)
        weights = np.asarray(raw["weights"], dtype=np.float64)
        version = str(raw["version"])
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as err:
        raise KgragError(ErrorCode.MALFORMED_JSON, f"fitted router: {err}") from err
    if kinds != [k.value for k in ROUTED_KINDS]:
        raise KgragError(ErrorCode.MISSING_FIELD, f"fitted router kinds {kinds} are not the routed kinds")
    n = mean.shape[0] if mean.ndim == 1 else -1
    if n < 1 or scale.shape != (n,) or weights.shape != (n + 1, len(ROUTED_KINDS)):
        raise KgragError(ErrorCode.MISSING_FIELD, "fitted router shapes disagree (mean, scale, weights)")
    return FittedRouter(version, _Model(weights, mean, scale))


def _fit(features: Matrix, labels: npt.NDArray[np.int64], n_kinds: int) -> _Model:
    mean = features.mean(axis=0)
    scale = features.std(axis=0)
    scale[scale < 1e-9] = 1.0
    x = np.hstack([(features - mean) / scale, np.ones((features.shape[0], 1))])
    y = np.zeros((features.shape[0], n_kinds))
    y[np.arange(features.shape[0]), labels] = 1.0
    w = np.zeros((x.shape[1], n_kinds))
    for _ in range(_STEPS):
        p = _softmax(x @ w)
        grad = x.T @ (p - y) / x.shape[0] + _L2 * w
        w -= _LEARNING_RATE * grad
    return _Model(w, mean, scale)


def _softmax(z: Matrix) -> Matrix:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    out: Matrix = e / e.sum(axis=1, keepdims=True)
    return out


# Trained models by router version: one training per process for a set and an embedding model, however many
# apps (and searchers) are built on them.
_TRAINED: dict[str, _Model] = {}
_TRAINING = threading.Lock()


class LearnedRouter:
    """Routes by a model trained lazily (first use, once, under a lock) from `examples` with `embedder`."""

    def __init__(
        self,
        embedder: Embedder,
        examples: Sequence[RouterExample],
        *,
        low_confidence: float = LOW_CONFIDENCE,
        fitted: FittedRouter | None = None,
    ) -> None:
        self.embedder = embedder
        self.examples = tuple(examples)
        self.low_confidence = low_confidence
        digest = hashlib.sha256()
        for e in self.examples:
            digest.update(f"{e.kind.value}\x1f{e.question}\n".encode())
        digest.update(f"{embedder.model_id}|{_STEPS}|{_LEARNING_RATE}|{_L2}|{low_confidence}".encode())
        digest.update("|".join(p.pattern for _, p in _CUES).encode("utf-8"))
        self.version = "learned-" + digest.hexdigest()[:12]
        # A shipped model fitted from anything else (another set, model or cue list) is not this router's.
        self.fitted = fitted if fitted is not None and fitted.version == self.version else None

    def _features(self, question: str) -> list[float]:
        vector = np.asarray(self.embedder.embed_query(question), dtype=np.float64)
        norm = float(np.linalg.norm(vector))
        unit = vector / norm if norm > 0 else vector
        return [*unit.tolist(), *cue_vector(question)]

    def fit(self) -> FittedRouter:
        """Train from the examples (never the shipped model): what `dump_fitted` writes and a test refits."""
        rows = np.asarray([self._features(e.question) for e in self.examples], dtype=np.float64)
        labels = np.asarray([ROUTED_KINDS.index(e.kind) for e in self.examples], dtype=np.int64)
        return FittedRouter(self.version, _fit(rows, labels, len(ROUTED_KINDS)))

    def _trained(self) -> _Model:
        if self.fitted is not None:
            return self.fitted.model
        with _TRAINING:
            model = _TRAINED.get(self.version)
            if model is None:
                model = _TRAINED[self.version] = self.fit().model
            return model

    def probabilities(self, question: str) -> dict[QuestionKind, float]:
        model = self._trained()
        row = (np.asarray([self._features(question)], dtype=np.float64) - model.mean) / model.scale
        p = _softmax(np.hstack([row, np.ones((1, 1))]) @ model.weights)[0]
        return {kind: float(p[i]) for i, kind in enumerate(ROUTED_KINDS)}

    def route(self, question: str) -> Route:
        ranked = sorted(self.probabilities(question).items(), key=lambda kv: (-kv[1], ROUTED_KINDS.index(kv[0])))
        (kind, top), second = ranked[0], ranked[1][0]
        signals = (
            *(f"learned:{k.value}={p:.2f}" for k, p in ranked[:3]),
            *cues_fired(question),
        )
        alternative = second if top < self.low_confidence else None
        return Route(kind, round(top, 3), signals, alternative=alternative)
