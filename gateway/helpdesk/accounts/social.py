"""Social sign-in: OpenID Connect's authorization-code flow, with state, nonce and PKCE (S256), against one provider
given by its issuer, client id and secret.

`start` reads the provider's discovery document (once; its `issuer` must be the configured one) and answers the URL to
send the browser to, with the `hd-oauth` cookie that remembers the flow: state, nonce, PKCE verifier and where to go
afterwards, signed (HS256) with the key the access tokens are signed with, for 10 minutes, sent back only to the
callback. `finish` checks the callback's state against that cookie, exchanges the code at the token endpoint
(client_secret_basic, with the verifier), and accepts the id_token only when it is signed by one of the provider's
keys (JWKS, RS256 or ES256), for this client, unexpired, with the flow's nonce and a verified email.

Every failure is a `SocialSignInError` with a code and a message for the person signing in; `ProviderUnavailable`
(one of them) when the provider cannot be read at all."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import quote_plus, urlencode

import httpx
import jwt
from litestar.datastructures import Cookie

from net.guard import tls_context

COOKIE = "hd-oauth"
CALLBACK_PATH = "/auth/callback"
FLOW_LIFETIME = timedelta(minutes=10)
"""How long a browser has, from `start`, to come back to the callback."""
SCOPE = "openid email profile"
ID_TOKEN_ALGORITHMS = frozenset({"RS256", "ES256"})
"""The only signatures an id_token may carry: asymmetric ones, by a key of the provider's JWKS (never HS256, whose
key would be the client secret, nor `none`)."""
LEEWAY_S = 60
"""Clock difference allowed with the provider on `exp` and `iat`."""
JWKS_REFRESH_S = 60.0
"""An id_token signed by a key the cached JWKS does not hold makes it be read again, at most this often."""
TIMEOUT = httpx.Timeout(10.0)
_COOKIE_ISSUER = "signalyard-helpdesk/oauth"
"""The flow cookie's `iss`: neither an access token nor this cookie passes for the other, though one key signs both."""
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


class SocialSignInError(Exception):
    """A sign-in refused: `code` names the reason for programs, `message` says it to the person."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class ProviderUnavailable(SocialSignInError):
    """The provider's discovery document or keys could not be read (down, unreachable, or not what was configured)."""


@dataclass(frozen=True, slots=True)
class SocialIdentity:
    """Who the provider vouches for, and where the browser asked to go once signed in."""

    email: str
    name: str | None
    subject: str
    redirect_to: str


@dataclass(frozen=True, slots=True)
class Discovery:
    """What the flow needs of the provider's discovery document."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    auth_methods: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Flow:
    state: str
    nonce: str
    verifier: str
    redirect_to: str


class SocialProvider:
    def __init__(
        self,
        issuer: str,
        client_id: str,
        client_secret: str,
        public_url: str,
        key: bytes,
        *,
        http: httpx.AsyncClient | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`issuer` exactly as the provider names itself (its discovery document is `{issuer}/.well-known/
        openid-configuration`); `public_url` this helpdesk's, whose `/auth/callback` is the redirect URI to register
        at the provider; `key` the session signing key (the one given to `AccessTokens`), which signs the flow
        cookie. `http`: the client to reach the provider with (its owner closes it); without one, each exchange
        opens its own."""
        self.issuer = issuer
        self.client_id = client_id
        self._client_secret = client_secret
        self.redirect_uri = f"{public_url.rstrip('/')}{CALLBACK_PATH}"
        self.secure = public_url.lower().startswith("https://")
        self._key = key
        self._http = http
        self._clock = clock
        self._discovery: Discovery | None = None
        self._jwks: jwt.PyJWKSet | None = None
        self._jwks_read_at = float("-inf")

    # the flow -------------------------------------------------------------------------------------------------------

    async def start(self, redirect_to: str | None) -> tuple[str, Cookie]:
        """The provider's authorization URL for a new flow, and the `hd-oauth` cookie that remembers it."""
        discovery = await self.discovery()
        flow = _Flow(
            secrets.token_urlsafe(32), secrets.token_urlsafe(32), secrets.token_urlsafe(64), redirect_to or "/"
        )
        challenge = base64.urlsafe_b64encode(hashlib.sha256(flow.verifier.encode()).digest()).rstrip(b"=").decode()
        query = urlencode(
            {
                "response_type": "code",
                "client_id": self.client_id,
                "redirect_uri": self.redirect_uri,
                "scope": SCOPE,
                "state": flow.state,
                "nonce": flow.nonce,
                "code_challenge": challenge,
                "code_challenge_method": "S256",
            }
        )
        endpoint = discovery.authorization_endpoint
        url = f"{endpoint}{'&' if '?' in endpoint else '?'}{query}"
        now = self._clock()
        claims = {
            "iss": _COOKIE_ISSUER,
            "aud": self.client_id,
            "iat": int(now),
            "exp": int(now + FLOW_LIFETIME.total_seconds()),
            "state": flow.state,
            "nonce": flow.nonce,
            "verifier": flow.verifier,
            "redirect_to": flow.redirect_to,
        }
        value = jwt.encode(claims, self._key, algorithm="HS256")
        return url, self._cookie(value, int(FLOW_LIFETIME.total_seconds()))

    def cleared_cookie(self) -> Cookie:
        """The cookie that removes the browser's `hd-oauth` (a flow is finished once, however it ends)."""
        return self._cookie("", 0)

    async def finish(self, code: str, state: str, cookie: str | None) -> SocialIdentity:
        """Who the provider signed in, from the callback's `code` and `state` and the browser's `hd-oauth` cookie."""
        flow = self._flow(cookie)
        if not state or not hmac.compare_digest(state.encode(), flow.state.encode()):
            raise SocialSignInError(
                "invalid_state", "This sign-in answer does not belong to the sign-in this browser started: start again"
            )
        if not code:
            raise SocialSignInError("invalid_request", "The provider sent no authorization code: start again")
        discovery = await self.discovery()
        id_token = await self._exchange(discovery, code, flow.verifier)
        claims = await self._verified(discovery, id_token, flow.nonce)
        email = claims.get("email")
        if not isinstance(email, str) or not _EMAIL.match(email) or len(email) > 320:
            raise SocialSignInError(
                "no_email", "The provider did not share an email address: allow it, or sign in by email"
            )
        # OIDC has a boolean; a few providers send the string "true"
        verified = claims.get("email_verified")
        if verified is not True and verified != "true":
            raise SocialSignInError(
                "email_not_verified",
                "The provider has not verified this email address: verify it there, or sign in with an email link",
            )
        name = claims.get("name")
        return SocialIdentity(
            email=email,
            name=name if isinstance(name, str) and name else None,
            subject=str(claims["sub"]),
            redirect_to=flow.redirect_to,
        )

    # the provider ---------------------------------------------------------------------------------------------------

    async def discovery(self) -> Discovery:
        """The provider's discovery document, read once (a failure is tried again at the next call)."""
        if self._discovery is not None:
            return self._discovery
        url = f"{self.issuer.rstrip('/')}/.well-known/openid-configuration"
        document = await self._get_json(url, "discovery document")
        issuer = document.get("issuer")
        if issuer != self.issuer:
            raise ProviderUnavailable(
                "provider_unavailable",
                f"The provider's discovery document names the issuer {issuer!r}, not the configured {self.issuer!r}",
            )
        endpoints = {name: document.get(name) for name in ("authorization_endpoint", "token_endpoint", "jwks_uri")}
        missing = sorted(name for name, value in endpoints.items() if not isinstance(value, str) or not value)
        if missing:
            raise ProviderUnavailable(
                "provider_unavailable", f"The provider's discovery document has no {', '.join(missing)}"
            )
        methods = document.get("token_endpoint_auth_methods_supported")
        self._discovery = Discovery(
            issuer=issuer,
            authorization_endpoint=str(endpoints["authorization_endpoint"]),
            token_endpoint=str(endpoints["token_endpoint"]),
            jwks_uri=str(endpoints["jwks_uri"]),
            auth_methods=tuple(m for m in methods if isinstance(m, str)) if isinstance(methods, list) else (),
        )
        return self._discovery

    async def _exchange(self, discovery: Discovery, code: str, verifier: str) -> str:
        """The id_token the token endpoint gives for `code` and the flow's PKCE verifier."""
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": self.redirect_uri,
            "code_verifier": verifier,
        }
        headers = {"Accept": "application/json"}
        # client_secret_basic, OIDC's default; client_secret_post only for a provider that says it takes no other
        if "client_secret_post" in discovery.auth_methods and "client_secret_basic" not in discovery.auth_methods:
            form |= {"client_id": self.client_id, "client_secret": self._client_secret}
        else:  # RFC 6749 2.3.1: each part form-encoded, then base64
            pair = f"{quote_plus(self.client_id)}:{quote_plus(self._client_secret)}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        try:
            async with self._client() as client:
                response = await client.post(discovery.token_endpoint, data=form, headers=headers)
        except httpx.HTTPError as error:
            raise ProviderUnavailable(
                "provider_unavailable", f"The provider could not be reached to finish the sign-in ({_reason(error)})"
            ) from error
        answer = _json_object(response)
        if response.status_code != 200:
            error_code = answer.get("error") if answer else None
            reason = error_code if isinstance(error_code, str) else f"HTTP {response.status_code}"
            raise SocialSignInError(
                "provider_refused", f"The provider refused to finish this sign-in ({reason[:100]}): start again"
            )
        id_token = answer.get("id_token") if answer else None
        if not isinstance(id_token, str):
            raise SocialSignInError("invalid_id_token", "The provider's answer holds no id_token")
        return id_token

    async def _verified(self, discovery: Discovery, id_token: str, nonce: str) -> dict[str, Any]:
        """The id_token's claims, once its signature, issuer, audience, times and nonce are checked."""
        try:
            header = jwt.get_unverified_header(id_token)
        except jwt.InvalidTokenError as error:
            raise SocialSignInError("invalid_id_token", f"The provider's id_token is malformed ({error})") from error
        algorithm = header.get("alg")
        if algorithm not in ID_TOKEN_ALGORITHMS:
            raise SocialSignInError(
                "invalid_id_token", f"The provider's id_token is signed with {algorithm!r}: only RS256 and ES256 count"
            )
        kid = header.get("kid")
        key = await self._signing_key(discovery, kid if isinstance(kid, str) else None, str(algorithm))
        try:
            claims: dict[str, Any] = jwt.decode(
                id_token,
                key.key,
                algorithms=[str(algorithm)],
                audience=self.client_id,
                issuer=discovery.issuer,
                leeway=LEEWAY_S,
                options={"require": ["iss", "aud", "exp", "iat", "sub"]},
            )
        except jwt.InvalidTokenError as error:
            raise SocialSignInError("invalid_id_token", f"The provider's id_token is not valid ({error})") from error
        if "azp" in claims and claims["azp"] != self.client_id:
            raise SocialSignInError("invalid_id_token", "The provider's id_token was issued to another client (azp)")
        given = claims.get("nonce")
        if not isinstance(given, str) or not hmac.compare_digest(given.encode(), nonce.encode()):
            raise SocialSignInError("invalid_id_token", "The provider's id_token is not for this sign-in (nonce)")
        return claims

    async def _signing_key(self, discovery: Discovery, kid: str | None, algorithm: str) -> jwt.PyJWK:
        """The provider's key that signs with `algorithm` under `kid` (the only one when the token names none). The
        JWKS is cached; a key it does not hold makes it be read again (the provider rotated), at most every minute."""
        if self._jwks is not None:
            found = _pick(self._jwks, kid, algorithm)
            if found is not None or self._clock() - self._jwks_read_at < JWKS_REFRESH_S:
                return _known(found, kid)
        document = await self._get_json(discovery.jwks_uri, "keys (JWKS)")
        try:
            jwks = jwt.PyJWKSet.from_dict(document)
        except jwt.PyJWTError as error:
            raise ProviderUnavailable(
                "provider_unavailable", f"The provider's keys (JWKS) are unusable ({error})"
            ) from error
        self._jwks, self._jwks_read_at = jwks, self._clock()
        return _known(_pick(jwks, kid, algorithm), kid)

    async def _get_json(self, url: str, what: str) -> dict[str, Any]:
        try:
            async with self._client() as client:
                response = await client.get(url, headers={"Accept": "application/json"})
        except httpx.HTTPError as error:
            raise ProviderUnavailable(
                "provider_unavailable", f"The provider's {what} could not be read at {url} ({_reason(error)})"
            ) from error
        document = _json_object(response)
        if response.status_code != 200 or document is None:
            raise ProviderUnavailable(
                "provider_unavailable",
                f"The provider's {what} could not be read at {url} (HTTP {response.status_code}"
                f"{'' if document is not None else ', not a JSON object'})",
            )
        return document

    @asynccontextmanager
    async def _client(self) -> AsyncIterator[httpx.AsyncClient]:
        if self._http is not None:
            yield self._http
            return
        async with httpx.AsyncClient(timeout=TIMEOUT, verify=tls_context()) as client:
            yield client

    # the cookie -----------------------------------------------------------------------------------------------------

    def _flow(self, cookie: str | None) -> _Flow:
        refused = SocialSignInError(
            "invalid_state",
            "This browser holds no sign-in in progress (it took over 10 minutes, or cookies are blocked): start again",
        )
        if not cookie:
            raise refused
        try:
            claims = jwt.decode(
                cookie,
                self._key,
                algorithms=["HS256"],
                issuer=_COOKIE_ISSUER,
                audience=self.client_id,
                options={"require": ["iss", "aud", "exp"], "verify_exp": False},
            )
        except jwt.InvalidTokenError:
            raise refused from None
        if float(claims["exp"]) <= self._clock():
            raise refused
        values = [claims.get(name) for name in ("state", "nonce", "verifier", "redirect_to")]
        if not all(isinstance(value, str) and value for value in values):
            raise refused
        return _Flow(*(str(value) for value in values))

    def _cookie(self, value: str, max_age: int) -> Cookie:
        return Cookie(
            key=COOKIE,
            value=value,
            max_age=max_age,
            path=CALLBACK_PATH,
            httponly=True,
            samesite="lax",
            secure=self.secure,
        )


def _pick(jwks: jwt.PyJWKSet, kid: str | None, algorithm: str) -> jwt.PyJWK | None:
    candidates = [
        key
        for key in jwks.keys
        if key.public_key_use in (None, "sig")
        and key.algorithm_name == algorithm
        and (kid is None or key.key_id == kid)
    ]
    return candidates[0] if len(candidates) == 1 or (kid is not None and candidates) else None


def _known(key: jwt.PyJWK | None, kid: str | None) -> jwt.PyJWK:
    if key is None:
        raise SocialSignInError(
            "invalid_id_token", f"The provider's id_token is signed by a key it does not publish (kid {kid!r})"
        )
    return key


def _json_object(response: httpx.Response) -> dict[str, Any] | None:
    try:
        document = response.json()
    except ValueError:
        return None
    return document if isinstance(document, dict) else None


def _reason(error: httpx.HTTPError) -> str:
    return str(error) or type(error).__name__
