"""The envelope cipher and the KEK ring (ADR 0008): seal, open, shred, rotate, key files."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from kgrag_adapters.crypto.envelope import EnvelopeCipher, PlaintextCipher
from kgrag_adapters.crypto.kek import KeyRing, file_key_ring, kek_files, new_key, write_key_file
from kgrag_adapters.memory.keys import MemoryKeyStore
from kgrag_core.errors import KgragError
from kgrag_core.shredding import ContentCipher, open_text, seal_text

SECRET = "the merger with Zyxwv closes on 3 March"


def test_sealed_text_opens_for_its_document_and_hides_the_plaintext() -> None:
    cipher = EnvelopeCipher(MemoryKeyStore(), KeyRing([new_key()]))
    assert isinstance(cipher, ContentCipher)
    sealed = seal_text(cipher.sealer("doc-1"), SECRET)
    assert SECRET.encode() not in sealed and b"Zyxwv" not in sealed
    assert open_text(cipher, "doc-1", sealed) == SECRET  # positive control: the owner reads it
    # Sealing is randomised: the same text twice gives two ciphertexts.
    assert seal_text(cipher.sealer("doc-1"), SECRET) != sealed


def test_a_sealed_value_does_not_open_as_another_documents() -> None:
    cipher = EnvelopeCipher(MemoryKeyStore(), KeyRing([new_key()]))
    sealed = seal_text(cipher.sealer("doc-1"), SECRET)
    cipher.sealer("doc-2")
    # doc-2 has a different key: the value's key id names doc-1's key, which doc-2 does not have.
    assert cipher.open("doc-2", sealed) is None


def test_shredding_the_key_makes_every_copy_unreadable() -> None:
    keys = MemoryKeyStore()
    cipher = EnvelopeCipher(keys, KeyRing([new_key()]))
    sealed = seal_text(cipher.sealer("doc-1"), SECRET)
    assert open_text(cipher, "doc-1", sealed) == SECRET  # cached key now
    assert cipher.shred("doc-1") is True
    assert cipher.open("doc-1", sealed) is None  # the in-process cache was dropped with the key
    assert cipher.shred("doc-1") is False
    # Re-ingesting the document makes a new key; the old copy still does not open.
    fresh = seal_text(cipher.sealer("doc-1"), "new text")
    assert open_text(cipher, "doc-1", fresh) == "new text"
    assert cipher.open("doc-1", sealed) is None


def test_tampered_values_fail_loudly() -> None:
    cipher = EnvelopeCipher(MemoryKeyStore(), KeyRing([new_key()]))
    sealed = bytearray(seal_text(cipher.sealer("doc-1"), SECRET))
    sealed[-1] ^= 1
    with pytest.raises(ValueError, match="failed authentication"):
        cipher.open("doc-1", bytes(sealed))


def test_rotation_rewraps_without_touching_content_and_retiring_the_old_kek_kills_old_wrappings() -> None:
    old, new = new_key(), new_key()
    keys = MemoryKeyStore()
    sealed = seal_text(EnvelopeCipher(keys, KeyRing([old])).sealer("doc-1"), SECRET)
    stale_copy = keys.rows["doc-1"]  # what a backup taken before the rotation holds
    from kgrag_adapters.crypto.rotation import rotate

    during = KeyRing([new, old])
    assert rotate(keys, during) == 1
    assert keys.count_wrapped_keys() == {during.kek_id: 1}
    after = EnvelopeCipher(keys, KeyRing([new]))  # the old KEK destroyed
    assert open_text(after, "doc-1", sealed) == SECRET  # content untouched, still readable
    # The pre-rotation wrapping (a dead tuple or a backup) no longer opens: its KEK is gone.
    restored = MemoryKeyStore()
    restored.add_wrapped_key(stale_copy)
    assert EnvelopeCipher(restored, KeyRing([new])).open("doc-1", sealed) is None


def test_the_key_file_is_created_owner_only_and_reused(tmp_path: Path) -> None:
    ring = file_key_ring(tmp_path / "keys")
    [path] = kek_files(tmp_path / "keys")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert file_key_ring(tmp_path / "keys").kek_id == ring.kek_id  # the same KEK on the next start
    second = write_key_file(tmp_path / "keys", new_key())
    assert kek_files(tmp_path / "keys")[0] == second  # the newest is the primary
    assert file_key_ring(tmp_path / "keys").kek_ids[1] == ring.kek_id  # the old one still unwraps


def test_a_key_file_others_can_read_is_refused(tmp_path: Path) -> None:
    file_key_ring(tmp_path / "keys")
    [path] = kek_files(tmp_path / "keys")
    path.chmod(0o644)
    with pytest.raises(KgragError, match="readable by other users"):
        file_key_ring(tmp_path / "keys")


def test_plaintext_cipher_is_the_unencrypted_baseline() -> None:
    plain = PlaintextCipher()
    sealed = seal_text(plain.sealer("doc-1"), SECRET)
    assert SECRET.encode() in sealed  # what KGRAG_CONTENT_ENCRYPTION=false stores
    assert open_text(plain, "doc-1", sealed) == SECRET
    # An encrypting cipher reads old unencrypted rows too (rows from before migration 0009).
    assert open_text(EnvelopeCipher(MemoryKeyStore(), KeyRing([new_key()])), "doc-1", sealed) == SECRET


def test_a_sealed_change_event_carries_no_plaintext_and_dies_with_the_key() -> None:
    from kgrag_core.acl import acl_from_source
    from kgrag_core.documents import SourceDocument
    from kgrag_core.errors import ErrorCode
    from kgrag_core.events import document_changed_from_source, source_from_document_changed

    cipher = EnvelopeCipher(MemoryKeyStore(), KeyRing([new_key()]))
    doc = SourceDocument(
        doc_id="doc-1",
        source="wiki",
        uri="wiki://zyxwv-merger",
        title="Zyxwv merger",
        body=SECRET.encode(),
        acl=acl_from_source({"groups": ["legal"]}),
        metadata={"author": "Zyxwv desk"},
    )
    payload = document_changed_from_source(doc, cipher.sealer("doc-1")).model_dump(mode="json")
    wire = repr(payload)
    assert "Zyxwv" not in wire and "zyxwv" not in wire  # title, URI, body, metadata: all sealed
    from kgrag_core.events import DocumentChanged

    event = DocumentChanged.model_validate(payload)
    opened = source_from_document_changed(event, cipher)  # positive control: the consumer reads it all
    assert (opened.title, opened.uri, opened.body, dict(opened.metadata)) == (
        doc.title,
        doc.uri,
        doc.body,
        {"author": "Zyxwv desk"},
    )
    cipher.shred("doc-1")
    with pytest.raises(KgragError) as err:
        source_from_document_changed(event, cipher)
    assert err.value.code is ErrorCode.CONTENT_SHREDDED
