"""Caller identity from a verified bearer token (JWT), never from the request body.

Tokens carry `sub` (the user), `groups` (list) and `scope` (space-separated: search, ask, ingest, admin).
The server verifies signature, issuer, audience and expiry with the configured key.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass

import jwt
from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from kgrag_core.acl import Caller
from kgrag_core.errors import ErrorCode, KgragError

SCOPES = ("search", "ask", "ingest", "admin")


class AuthSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="KGRAG_AUTH_", extra="ignore")

    issuer: str = "kgrag-local"
    audience: str = "kgrag"
    algorithm: str = Field("HS256", pattern="^(HS256|HS384|HS512|RS256|ES256)$")
    secret: SecretStr | None = Field(None, description="HMAC key, or the PEM public key for RS256/ES256.")
    leeway_s: int = 30


@dataclass(frozen=True, slots=True)
class Principal:
    caller: Caller
    scopes: frozenset[str]

    def require(self, scope: str) -> None:
        if scope not in self.scopes and "admin" not in self.scopes:
            raise KgragError(ErrorCode.FORBIDDEN, f"This token lacks the '{scope}' scope.")


@dataclass(frozen=True, slots=True)
class TokenVerifier:
    key: str
    issuer: str
    audience: str
    algorithm: str
    leeway_s: int = 30

    @staticmethod
    def from_settings(settings: AuthSettings) -> tuple[TokenVerifier, bool]:
        """The verifier, and whether it uses a fresh development key (no key was configured)."""
        dev = settings.secret is None
        key = secrets.token_urlsafe(32) if settings.secret is None else settings.secret.get_secret_value()
        algorithm = "HS256" if dev else settings.algorithm
        return TokenVerifier(key, settings.issuer, settings.audience, algorithm, settings.leeway_s), dev

    def verify(self, authorization: str | None) -> Principal:
        if not authorization or not authorization.lower().startswith("bearer "):
            raise KgragError(
                ErrorCode.UNAUTHENTICATED, "A bearer token is required.", hint="Send 'Authorization: Bearer <token>'."
            )
        token = authorization.split(" ", 1)[1].strip()
        try:
            claims = jwt.decode(
                token,
                self.key,
                algorithms=[self.algorithm],
                audience=self.audience,
                issuer=self.issuer,
                leeway=self.leeway_s,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.PyJWTError as err:
            raise KgragError(ErrorCode.UNAUTHENTICATED, f"The token was rejected: {err}.") from err
        groups = claims.get("groups", [])
        if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
            raise KgragError(ErrorCode.UNAUTHENTICATED, "The token's 'groups' claim must be a list of strings.")
        scopes = frozenset(str(claims.get("scope", "")).split()) & frozenset(SCOPES)
        try:
            caller = Caller(user=str(claims["sub"]), groups=tuple(sorted(set(groups))), admin="admin" in scopes)
        except KgragError as err:  # a name no principal may have (INVALID_PRINCIPAL): no identity at all
            raise KgragError(ErrorCode.UNAUTHENTICATED, f"The token names an invalid principal: {err.message}") from err
        return Principal(caller, scopes)

    def issue(self, sub: str, *, groups: list[str], scopes: list[str], ttl_s: int = 3600) -> str:
        """Sign a token (development key and tests only; production tokens come from your identity provider)."""
        now = int(time.time())
        claims = {
            "sub": sub,
            "groups": groups,
            "scope": " ".join(scopes),
            "iss": self.issuer,
            "aud": self.audience,
            "iat": now,
            "exp": now + ttl_s,
        }
        return jwt.encode(claims, self.key, algorithm=self.algorithm)
