"""Call the API as this request's token: every fragment gets its data from `/v1`, in process, with the
browser's own `Authorization` header, so the app can never see or do more than that token may (the same
authentication, scopes, ACL filtering and errors as any other client)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
from fastapi import Request

from kgrag_core.errors import ErrorCode, KgragError

_BASE = "http://kgrag-ui.internal"  # never resolved: the transport is the app itself


@dataclass(frozen=True, slots=True)
class ApiAnswer:
    status: int
    body: Any

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def error(self) -> dict[str, Any]:
        """The API's stable error body (`code`, `message`, maybe `hint`)."""
        err = self.body.get("error") if isinstance(self.body, dict) else None
        return err if isinstance(err, dict) else {"code": ErrorCode.INTERNAL.value, "message": str(self.body)}


@dataclass(frozen=True, slots=True)
class ApiAsCaller:
    request: Request

    async def get(self, path: str, params: dict[str, Any] | None = None) -> ApiAnswer:
        return await self._call("GET", path, params=params)

    async def post(self, path: str, body: dict[str, Any]) -> ApiAnswer:
        return await self._call("POST", path, json=body)

    async def _call(self, method: str, path: str, **kwargs: Any) -> ApiAnswer:
        if not path.startswith("/v1/"):
            raise ValueError(f"The web app calls only the /v1 API, not {path!r}.")
        authorization = self.request.headers.get("authorization")
        headers = {"authorization": authorization} if authorization else {}
        transport = httpx.ASGITransport(app=self.request.app)
        async with httpx.AsyncClient(transport=transport, base_url=_BASE, headers=headers) as client:
            response = await client.request(method, path, **kwargs)
        try:
            body = response.json()
        except ValueError as err:
            raise KgragError(ErrorCode.INTERNAL, f"The API answered {path} with no JSON body.") from err
        return ApiAnswer(response.status_code, body)


def api_as_caller(request: Request) -> ApiAsCaller:
    """FastAPI dependency: `api: Annotated[ApiAsCaller, Depends(api_as_caller)]`."""
    return ApiAsCaller(request)
