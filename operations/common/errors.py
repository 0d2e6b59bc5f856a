"""What an operation refuses, as a kind every entrypoint answers in its own words: REST as a status and its envelope,
procedures as a tRPC code, pages as a message beside the form."""

from __future__ import annotations

from typing import ClassVar, Literal

Kind = Literal["invalid", "not_found", "forbidden", "conflict", "precondition", "too_large", "stale_cursor", "provider"]


class OperationError(Exception):
    """A refusal for people to read: `message` says what was wrong and, where it can, what to do instead."""

    kind: ClassVar[Kind]

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Invalid(OperationError):
    """The input cannot be acted on as given (REST 400, BAD_REQUEST)."""

    kind = "invalid"


class NotFound(OperationError):
    """No such thing in the actor's organization (404, NOT_FOUND). `elsewhere`: it is another organization's, which
    REST answers as absent and the procedures, where the contract says so, as FORBIDDEN."""

    kind = "not_found"

    def __init__(self, message: str, *, elsewhere: bool = False) -> None:
        super().__init__(message)
        self.elsewhere = elsewhere


class StaleCursor(OperationError):
    """A listing's cursor names no item of it: REST answers 404 (what the query names is not there), the procedures
    BAD_REQUEST (section 7: an input that does not fit)."""

    kind = "stale_cursor"


class Forbidden(OperationError):
    """The actor may not do this (403, FORBIDDEN)."""

    kind = "forbidden"


class Conflict(OperationError):
    """The state of things refuses it: an address taken, the last admin, a merged ticket (409, CONFLICT)."""

    kind = "conflict"


class Precondition(OperationError):
    """Something the operation needs is not set up (412, PRECONDITION_FAILED)."""

    kind = "precondition"


class TooLarge(OperationError):
    """Over a documented size (413, PAYLOAD_TOO_LARGE)."""

    kind = "too_large"


class ProviderRefused(OperationError):
    """An outside party the operation needed refused it, or could not be reached (502; procedures:
    INTERNAL_SERVER_ERROR): a commerce platform that would not exchange a code or register a subscription."""

    kind = "provider"
