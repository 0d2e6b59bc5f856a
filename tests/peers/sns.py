"""A notification topic service in the shape of Amazon SNS, on a real local HTTPS socket, for tests of the marketplace
endpoint (`gateway/helpdesk/inbound/marketplace.py`).

It signs messages as SNS does: `SignatureVersion` 1 (SHA1withRSA) or 2 (SHA256withRSA) over SNS's canonical string
(the signed fields of the message's type, each as "Name\\nvalue\\n"), with an RSA key whose self-signed certificate it
serves at `https://sns.<region>.amazonaws.com/SimpleNotificationService-<id>.pem`; and it answers the SubscribeURL of
its confirmations (`/?Action=ConfirmSubscription&TopicArn=...&Token=...`) with a `ConfirmSubscriptionResponse`,
recording the confirmation. Its TLS certificate (from a `trustme` CA) is for the SNS host name, so a client that
trusts `client_tls` and dials through `resolve` reaches it under the real name.

Usage::

    with SnsPeer() as sns:
        client = SnsClient(allow_private=True, tls=sns.client_tls, resolve=sns.resolve)
        body = sns.notification(topic_arn, json.dumps({...}), version=2)      # a signed message, as JSON bytes
        sns.confirmed                                                          # [(topic_arn, token), ...]
        sns.certificate_fetches                                                # how often the certificate was read

It is served by `tests/peers/serving.py` (uvicorn in a daemon thread with its own event loop).
"""

from __future__ import annotations

import base64
import json
import ssl
import tempfile
import threading
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Self
from urllib.parse import parse_qs, urlencode

import trustme
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import NameOID

from tests.peers.serving import LocalServer

__all__ = ["SnsPeer"]

SIGNED = {
    "Notification": ("Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"),
    "SubscriptionConfirmation": ("Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"),
    "UnsubscribeConfirmation": ("Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"),
}


def string_to_sign(message: dict[str, Any]) -> bytes:
    """SNS's canonical form of a message (AWS's "Verifying the signatures of Amazon SNS messages")."""
    return "".join(
        f"{name}\n{message[name]}\n" for name in SIGNED[message["Type"]] if message.get(name) is not None
    ).encode()


def _signing_certificate(key: rsa.RSAPrivateKey) -> bytes:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sns.amazonaws.com")])
    now = datetime.now(UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=30))
        .sign(key, hashes.SHA256())
    )
    return certificate.public_bytes(serialization.Encoding.PEM)


class SnsPeer:
    def __init__(self, region: str = "us-east-1") -> None:
        self.region = region
        self.host = f"sns.{region}.amazonaws.com"
        self.ca = trustme.CA()
        self._dir = tempfile.TemporaryDirectory(prefix="sns-peer-")
        self.ca_bundle = Path(self._dir.name) / "ca.pem"
        self.ca.cert_pem.write_to_path(str(self.ca_bundle))
        self.client_tls = ssl.create_default_context(cafile=str(self.ca_bundle))
        """Trusts this peer's TLS certificate (and nothing else)."""
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.certificate_pem = _signing_certificate(self.key)
        self.certificate_path = f"/SimpleNotificationService-{uuid.uuid4().hex}.pem"
        self.confirmed: list[tuple[str, str]] = []
        self.certificate_fetches = 0
        self.fail_confirmations = 0
        """Answer this many confirmations 500 before answering them."""
        self._lock = threading.Lock()
        self._server: LocalServer | None = None
        self.port = 0

    # ------------------------------------------------------------------------------------------------ lifecycle

    def start(self) -> Self:
        served = Path(self._dir.name) / "server.pem"
        self.ca.issue_cert(self.host).private_key_and_cert_chain_pem.write_to_path(str(served))
        self._server = LocalServer(self._app, "SNS peer", certfile=str(served)).start()
        self.port = self._server.port
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
        self._dir.cleanup()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    async def resolve(self, host: str, port: int) -> list[tuple[str, int]]:
        """The resolver a client of this peer dials through: the SNS host (on https's port) is this peer."""
        if host == self.host and port == 443:
            return [("127.0.0.1", self.port)]
        raise OSError(f"{host} is not known to the SNS peer")

    # ------------------------------------------------------------------------------------------------ messages

    @property
    def certificate_url(self) -> str:
        return f"https://{self.host}{self.certificate_path}"

    def sign(self, message: dict[str, Any], version: int = 2, *, certificate_url: str | None = None) -> bytes:
        """The message signed as SNS signs it, as the JSON body SNS posts."""
        algorithm = hashes.SHA1() if version == 1 else hashes.SHA256()
        message = dict(message, SignatureVersion=str(version), SigningCertURL=certificate_url or self.certificate_url)
        signature = self.key.sign(string_to_sign(message), padding.PKCS1v15(), algorithm)
        message["Signature"] = base64.b64encode(signature).decode()
        return json.dumps(message).encode()

    def _envelope(self, kind: str, topic_arn: str, message: str, timestamp: datetime | None) -> dict[str, Any]:
        at = timestamp or datetime.now(UTC)
        return {
            "Type": kind,
            "MessageId": str(uuid.uuid4()),
            "TopicArn": topic_arn,
            "Message": message,
            "Timestamp": at.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        }

    def notification(
        self,
        topic_arn: str,
        message: str,
        *,
        subject: str | None = None,
        version: int = 2,
        timestamp: datetime | None = None,
    ) -> bytes:
        envelope = self._envelope("Notification", topic_arn, message, timestamp)
        if subject is not None:
            envelope["Subject"] = subject
        envelope["UnsubscribeURL"] = f"https://{self.host}/?Action=Unsubscribe&SubscriptionArn={topic_arn}:sub"
        return self.sign(envelope, version)

    def confirmation(
        self,
        topic_arn: str,
        *,
        kind: str = "SubscriptionConfirmation",
        version: int = 2,
        subscribe_url: str | None = None,
    ) -> bytes:
        token = uuid.uuid4().hex * 2
        text = f"You have chosen to subscribe to the topic {topic_arn}. To confirm, visit the SubscribeURL."
        envelope = self._envelope(kind, topic_arn, text, None)
        envelope["Token"] = token
        query = urlencode({"Action": "ConfirmSubscription", "TopicArn": topic_arn, "Token": token})
        envelope["SubscribeURL"] = subscribe_url or f"https://{self.host}/?{query}"
        return self.sign(envelope, version)

    # ------------------------------------------------------------------------------------------------ serving

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        path, query = scope["path"], parse_qs(scope["query_string"].decode())
        status, content_type, body = 404, "text/plain", b"not found"
        if scope["method"] == "GET" and path == self.certificate_path:
            with self._lock:
                self.certificate_fetches += 1
            status, content_type, body = 200, "application/x-x509-ca-cert", self.certificate_pem
        elif scope["method"] == "GET" and path == "/" and query.get("Action") == ["ConfirmSubscription"]:
            with self._lock:
                failing = self.fail_confirmations > 0
                self.fail_confirmations -= 1 if failing else 0
                if not failing:
                    self.confirmed.append((query["TopicArn"][0], query["Token"][0]))
            if failing:
                status, body = 500, b"<ErrorResponse><Error><Code>InternalFailure</Code></Error></ErrorResponse>"
            else:
                arn = f"{query['TopicArn'][0]}:{uuid.uuid4()}"
                status = 200
                body = (
                    '<ConfirmSubscriptionResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/">'
                    f"<ConfirmSubscriptionResult><SubscriptionArn>{arn}</SubscriptionArn></ConfirmSubscriptionResult>"
                    "</ConfirmSubscriptionResponse>"
                ).encode()
            content_type = "text/xml"
        await send(
            {"type": "http.response.start", "status": status, "headers": [(b"content-type", content_type.encode())]}
        )
        await send({"type": "http.response.body", "body": body})
