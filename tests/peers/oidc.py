"""A local OpenID Connect provider on a real socket, for tests of the helpdesk's social sign-in.

Usage::

    with OidcProvider("helpdesk", "s3cret", redirect_uri="http://helpdesk.test/auth/callback") as provider:
        provider.approve("ada@example.com", name="Ada Agent")
        social = SocialProvider(provider.issuer, "helpdesk", "s3cret", "http://helpdesk.test", key)
        ...  # the browser goes to `url`: /authorize answers 302 to the redirect URI with a code and the state
        assert provider.token_requests[-1].outcome == "issued"

Like `tests/peers/twilio.py`, it runs uvicorn in a daemon thread with its own event loop. It serves:

* `GET /.well-known/openid-configuration`: the discovery document (`issuer` may be made wrong with `discovery_issuer`,
  and the whole answer an error with `discovery_status`);
* `GET /authorize`: checks the client, the registered redirect URI, `response_type=code`, `scope` with `openid`, a
  state, a nonce and an S256 code challenge (else 400, no redirect), then, as a user who says yes at once, redirects
  302 to the redirect URI with a new code and the state; or, after `deny()`, with `error=access_denied` and the state;
* `POST /token`: client_secret_basic (else 401 `invalid_client`), `grant_type=authorization_code`, a code issued here
  and never presented before (codes are spent by their first presentation, whatever its outcome), the redirect URI
  the code was issued for, and the PKCE verifier whose S256 is the code's challenge (else 400 `invalid_grant`); then
  an access token and an id_token signed RS256 with iss, aud, exp, iat, sub, nonce, email, email_verified and name.
  `tamper(**claims)` changes the id_tokens' claims (None removes one); `sign_with` signs them otherwise;
* `GET /jwks`: the RSA public key (made with `cryptography`), with its kid.

Every request is recorded (`requests`; `token_requests` with each one's `outcome`). `reset()` forgets programmes,
codes and records, so that one server serves many tests.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import parse_qs, unquote_plus, urlencode

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from tests.peers.serving import ServedPeer, read_request

__all__ = ["Approved", "OidcProvider", "RecordedRequest"]

Signer = Literal["provider", "unknown-key", "hs256-client-secret", "none"]
"""How id_tokens are signed: by the provider's published key, by a key it does not publish, with HS256 under the
client secret (the classic algorithm confusion), or not at all (`alg: none`)."""


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    query: dict[str, str]
    form: dict[str, str]
    authorization: str | None
    outcome: str = ""
    """For /token: `issued`, or why it was refused (`invalid_client`, `unknown_code`, `redirect_uri`, `pkce`...)."""


@dataclass(frozen=True)
class Approved:
    """The user whom /authorize signs in."""

    email: str
    email_verified: bool = True
    name: str | None = "Ada Agent"
    sub: str = field(default_factory=lambda: uuid.uuid4().hex)


@dataclass(frozen=True)
class _Grant:
    client_id: str
    redirect_uri: str
    challenge: str
    nonce: str
    user: Approved


@dataclass
class _Answer:
    status: int
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def json(cls, status: int, document: Any, *headers: tuple[str, str]) -> _Answer:
        return cls(status, json.dumps(document).encode(), [("content-type", "application/json"), *headers])


def s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


class OidcProvider(ServedPeer):
    """An OpenID Connect provider on 127.0.0.1 and a free port; use as a context manager."""

    name = "OIDC provider peer"

    def __init__(self, client_id: str, client_secret: str, *, redirect_uri: str) -> None:
        self.client_id = client_id
        self.client_secret = client_secret
        self.redirect_uri = redirect_uri
        self.kid = "test-key-1"
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self._other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self._lock = threading.Lock()
        self.reset()

    @property
    def issuer(self) -> str:
        """`http://127.0.0.1:<port>`, once started."""
        return self.base_url

    # ---------------------------------------------------------------- programming

    def reset(self) -> None:
        """Forget the approved user, denials, tampering, codes and records."""
        with self._lock:
            self._user: Approved | None = Approved(f"social.{uuid.uuid4().hex[:10]}@example.com")
            self._deny: str | None = None
            self._tamper: dict[str, Any] = {}
            self.sign_with: Signer = "provider"
            self.discovery_issuer: str | None = None
            """The issuer the discovery document names, when not this server's own."""
            self.discovery_status = 200
            self._grants: dict[str, _Grant] = {}
            self._requests: list[RecordedRequest] = []

    def approve(self, email: str, *, email_verified: bool = True, name: str | None = "Ada Agent") -> Approved:
        """/authorize signs `email` in from now on."""
        with self._lock:
            self._user, self._deny = Approved(email, email_verified, name), None
            return self._user

    @property
    def user(self) -> Approved:
        with self._lock:
            assert self._user is not None
            return self._user

    def deny(self, error: str = "access_denied") -> None:
        """/authorize answers `error` (the user said no) from now on."""
        with self._lock:
            self._deny = error

    def tamper(self, **claims: Any) -> None:
        """The id_tokens issued from now on carry these claims instead (None: without the claim)."""
        with self._lock:
            self._tamper.update(claims)

    # ---------------------------------------------------------------- inspection

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def token_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == "/token"]

    def count(self, path: str) -> int:
        return sum(1 for r in self.requests if r.path == path)

    def jwks(self) -> dict[str, Any]:
        public = RSAAlgorithm.to_jwk(self._key.public_key(), as_dict=True)
        return {"keys": [public | {"kid": self.kid, "use": "sig", "alg": "RS256"}]}

    # ---------------------------------------------------------------- HTTP

    def _discovery(self) -> _Answer:
        if self.discovery_status != 200:
            return _Answer.json(self.discovery_status, {"error": "server_error"})
        return _Answer.json(
            200,
            {
                "issuer": self.discovery_issuer or self.issuer,
                "authorization_endpoint": f"{self.issuer}/authorize",
                "token_endpoint": f"{self.issuer}/token",
                "jwks_uri": f"{self.issuer}/jwks",
                "response_types_supported": ["code"],
                "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["RS256"],
                "scopes_supported": ["openid", "email", "profile"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic"],
                "code_challenge_methods_supported": ["S256"],
            },
        )

    def _authorize(self, query: dict[str, str]) -> _Answer:
        wrong = [
            name
            for name, good in (
                ("client_id", query.get("client_id") == self.client_id),
                ("redirect_uri", query.get("redirect_uri") == self.redirect_uri),
                ("response_type", query.get("response_type") == "code"),
                ("scope", "openid" in query.get("scope", "").split()),
                ("state", bool(query.get("state"))),
                ("nonce", bool(query.get("nonce"))),
                ("code_challenge", len(query.get("code_challenge", "")) == 43),
                ("code_challenge_method", query.get("code_challenge_method") == "S256"),
            )
            if not good
        ]
        if wrong:  # never redirected: the redirect URI itself may be the wrong thing
            return _Answer(400, f"invalid request: {', '.join(wrong)}".encode(), [("content-type", "text/plain")])
        with self._lock:
            if self._deny is not None:
                back = {"error": self._deny, "error_description": "The user said no", "state": query["state"]}
            else:
                assert self._user is not None
                code = secrets.token_urlsafe(24)
                self._grants[code] = _Grant(
                    query["client_id"], query["redirect_uri"], query["code_challenge"], query["nonce"], self._user
                )
                back = {"code": code, "state": query["state"]}
        return _Answer(302, b"", [("location", f"{query['redirect_uri']}?{urlencode(back)}")])

    def _token(self, form: dict[str, str], authorization: str | None) -> tuple[_Answer, str]:
        if not self._client_authenticated(authorization):
            refused = _Answer.json(401, {"error": "invalid_client"}, ("www-authenticate", 'Basic realm="oidc"'))
            return refused, "invalid_client"
        if form.get("grant_type") != "authorization_code":
            return _Answer.json(400, {"error": "unsupported_grant_type"}), "grant_type"
        with self._lock:
            grant = self._grants.pop(form.get("code", ""), None)  # spent by its first presentation
        if grant is None:
            return _invalid_grant("unknown or used code"), "unknown_code"
        if grant.client_id != self.client_id:
            return _invalid_grant("code of another client"), "client"
        if form.get("redirect_uri") != grant.redirect_uri:
            return _invalid_grant("redirect_uri differs"), "redirect_uri"
        if not secrets.compare_digest(s256(form.get("code_verifier", "")), grant.challenge):
            return _invalid_grant("PKCE verification failed"), "pkce"
        answer = {
            "access_token": secrets.token_urlsafe(24),
            "token_type": "Bearer",
            "expires_in": 3600,
            "scope": "openid email profile",
            "id_token": self._id_token(grant),
        }
        return _Answer.json(200, answer, ("cache-control", "no-store")), "issued"

    def _client_authenticated(self, authorization: str | None) -> bool:
        if not authorization or not authorization.startswith("Basic "):
            return False
        try:
            client_id, _, secret = base64.b64decode(authorization[6:]).decode().partition(":")
        except ValueError:
            return False
        return unquote_plus(client_id) == self.client_id and unquote_plus(secret) == self.client_secret

    def _id_token(self, grant: _Grant) -> str:
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "aud": grant.client_id,
            "sub": grant.user.sub,
            "iat": now,
            "exp": now + 300,
            "nonce": grant.nonce,
            "email": grant.user.email,
            "email_verified": grant.user.email_verified,
            "name": grant.user.name,
        }
        with self._lock:
            claims |= self._tamper
            signer = self.sign_with
        claims = {name: value for name, value in claims.items() if value is not None}
        if signer == "provider":
            return jwt.encode(claims, self._key, algorithm="RS256", headers={"kid": self.kid})
        if signer == "unknown-key":
            return jwt.encode(claims, self._other_key, algorithm="RS256", headers={"kid": "not-published"})
        if signer == "hs256-client-secret":
            return jwt.encode(claims, self.client_secret.ljust(32, "x"), algorithm="HS256", headers={"kid": self.kid})
        unsigned = [
            base64.urlsafe_b64encode(json.dumps(part).encode()).rstrip(b"=").decode()
            for part in ({"alg": "none", "typ": "JWT", "kid": self.kid}, claims)
        ]
        return ".".join([*unsigned, ""])

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body, headers = await read_request(scope, receive)
        query = {k: v[-1] for k, v in parse_qs(scope["query_string"].decode(), keep_blank_values=True).items()}
        form: dict[str, str] = {}
        if headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            form = {k: v[-1] for k, v in parse_qs(body.decode(), keep_blank_values=True).items()}
        method, path, outcome = scope["method"], scope["path"], ""
        if (method, path) == ("GET", "/.well-known/openid-configuration"):
            answer = self._discovery()
        elif (method, path) == ("GET", "/authorize"):
            answer = self._authorize(query)
        elif (method, path) == ("POST", "/token"):
            answer, outcome = self._token(form, headers.get("authorization"))
        elif (method, path) == ("GET", "/jwks"):
            answer = _Answer.json(200, self.jwks())
        else:
            answer = _Answer.json(404, {"error": "not_found"})
        recorded = RecordedRequest(method, path, query, form, headers.get("authorization"), outcome)
        with self._lock:
            self._requests.append(recorded)
        await send(
            {
                "type": "http.response.start",
                "status": answer.status,
                "headers": [(k.encode(), v.encode()) for k, v in answer.headers],
            }
        )
        await send({"type": "http.response.body", "body": answer.body})


def _invalid_grant(description: str) -> _Answer:
    return _Answer.json(400, {"error": "invalid_grant", "error_description": description})
