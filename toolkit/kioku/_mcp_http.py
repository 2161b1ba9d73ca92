"""``kioku mcp --http``: the MCP server over streamable HTTP.

Behind a bearer token (``KIOKU_MCP_TOKEN``) and Host/Origin allow-lists. The transport is
FastMCP's; the token check is kioku's own middleware, because FastMCP's bearer hook
(``token_verifier``) comes with OAuth resource-server settings (an issuer URL, scopes)
that one shared token does not have.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from dataclasses import dataclass

from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from kioku._config import KiokuSettings
from kioku._mcp_server import KiokuMcp, build_server


@dataclass(frozen=True, slots=True)
class HttpOptions:
    """Where ``kioku mcp --http`` listens and whom it lets in."""

    token: str
    """The bearer token every request must carry."""
    host: str = "127.0.0.1"
    port: int = 8765
    allowed_hosts: tuple[str, ...] = ()
    """Host header values accepted besides this machine's loopback names and ``host``."""
    allowed_origins: tuple[str, ...] = ()
    """Origin header values accepted besides ``http://`` + those names."""

    @property
    def url(self) -> str:
        """The endpoint clients connect to."""
        return f"http://{_host_port(self.host, self.port)}/mcp"

    @property
    def loopback_only(self) -> bool:
        """Whether only this machine can reach the server."""
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host.strip("[]")).is_loopback
        except ValueError:
            return False


def http_token(settings: KiokuSettings) -> tuple[str, bool]:
    """The bearer token (``KIOKU_MCP_TOKEN``, or a new random one) and whether it is new."""
    if settings.mcp_token is not None:
        return settings.mcp_token.get_secret_value(), False
    return secrets.token_urlsafe(32), True


def _host_port(host: str, port: int) -> str:
    bracketed = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"{bracketed}:{port}"


def transport_security(options: HttpOptions) -> TransportSecuritySettings:
    """Host and Origin allow-lists: loopback names and ``--host``, plus the extra ones."""
    names = ("127.0.0.1", "localhost", "[::1]", options.host)
    hosts = [_host_port(name, options.port) for name in names]
    origins = [f"http://{host}" for host in hosts]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(dict.fromkeys([*hosts, *options.allowed_hosts])),
        allowed_origins=list(dict.fromkeys([*origins, *options.allowed_origins])),
    )


class BearerAuth:
    """ASGI middleware answering 401 to HTTP requests without the bearer token."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        """Guard ``app`` with ``token``."""
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass authorised requests (and non-HTTP events) on; refuse the rest."""
        if scope["type"] == "http":
            presented = _bearer(Headers(scope=scope))
            if presented is None or not hmac.compare_digest(presented, self._token):
                challenge = 'Bearer realm="kioku"'
                if presented is not None:
                    challenge += ', error="invalid_token"'
                refusal = JSONResponse(
                    {"error": "unauthorized", "reason": "Send Authorization: Bearer <token>."},
                    status_code=401,
                    headers={"WWW-Authenticate": challenge},
                )
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _bearer(headers: Headers) -> bytes | None:
    """The token of an ``Authorization: Bearer`` header, as sent (``None`` if absent)."""
    scheme, _, credentials = headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not credentials.strip():
        return None
    return credentials.strip().encode("latin-1")  # Starlette decoded the bytes as latin-1


def http_app(app: KiokuMcp, options: HttpOptions) -> ASGIApp:
    """The ASGI application serving ``app`` at ``/mcp`` behind the token and allow-lists.

    FastMCP's streamable HTTP application (its session manager, run by the application's
    lifespan), wrapped in :class:`BearerAuth`.
    """
    server = build_server(app, transport_security=transport_security(options))
    return BearerAuth(server.streamable_http_app(), options.token)


def serve_http(app: KiokuMcp, options: HttpOptions) -> None:
    """Serve streamable HTTP at :attr:`HttpOptions.url` until interrupted."""
    import uvicorn

    uvicorn.run(http_app(app, options), host=options.host, port=options.port, log_level="warning")
