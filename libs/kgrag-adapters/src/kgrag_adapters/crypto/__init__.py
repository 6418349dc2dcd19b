"""Crypto-shredding: the one place kgrag encrypts content (AES-256-GCM envelope encryption).

`EnvelopeCipher` implements the core's `ContentCipher` over a `KeyStore` (wrapped data keys, kept in
PostgreSQL) and a `KeyRing` of key-encryption keys (a local key file in embedded mode, `KGRAG_KEK` in
distributed mode). See docs/adr/0008-crypto-shredding.md.
"""
