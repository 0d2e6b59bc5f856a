"""How the photo API is documented (`/docs/openapi.json`): each route's operation with every status and real error
examples, the verify body in both forms, the headers routes read themselves (gateway.common.openapi says why)."""

from __future__ import annotations

from litestar.openapi import ResponseSpec
from litestar.openapi.spec import OpenAPIFormat, OpenAPIMediaType, OpenAPIType, RequestBody, Schema

from gateway.common import openapi
from gateway.common.app import ApiDocument
from gateway.photo.auth import KEY_HEADER
from gateway.photo.errors import ErrorBody
from gateway.photo.schemas import (
    CreateInspectionRequest,
    CreateKeyRequest,
    InspectionCreated,
    InspectionList,
    KeyCreated,
    KeyList,
    KeyRevoked,
    ReviewRequest,
    VerificationList,
)
from topics.photo import POLICIES, Inspection, Verification

DOCUMENT = ApiDocument(
    "signalyard photo compliance",
    "2026-11",
    "An image and a policy in; a compliance verdict, its confidence, category, violation reasons and feedback out. "
    "Sandbox keys (`pc_test_...`) are free and never billed; live keys (`pc_live_...`) count against the account's "
    "monthly cap.",
    ("apiKey", KEY_HEADER.security_scheme("`X-API-Key: pc_test_...` (sandbox) or `pc_live_...`")),
)

ERRORS: dict[int, tuple[str, list[tuple[str, str]]]] = {
    400: (
        "A missing or invalid field, an image over 10 MB or of another type, an unknown policy",
        [
            ("missing_field", "Missing field: image"),
            ("too_large", "Image too large: the limit is 10 MB"),
            ("unknown_policy", "Unknown policy 'drivers_license': use one of us_passport, icao, profile_photo"),
            ("not_https", "url must be an HTTPS URL"),
        ],
    ),
    401: (
        "No key, or an unknown, revoked or expired one",
        [("missing_key", "Missing API key: send it in the X-API-Key header"), ("invalid_key", "Invalid API key")],
    ),
    403: (
        "A verify_only key on management or history; no active subscription (live verify); another service's key",
        [
            ("verify_only", "This key's scope is verify_only: it can only submit images to verify"),
            ("no_subscription", "This account has no active subscription"),
        ],
    ),
    404: ("No such object on this account", [("not_found", "No key with that id on this account")]),
    409: (
        "The verification is not completed yet (review); the account's endpoints are at their limit (webhooks); the "
        "inspection is no longer open (cancel)",
        [
            ("not_completed", "Only a completed verification can be reviewed"),
            ("too_many", "An account can have at most 16 webhook endpoints; delete one first"),
            ("not_open", "Only an open inspection can be cancelled: this one was submitted already"),
        ],
    ),
    422: (
        "Idempotency-Key reused with a different request body",
        [("idempotency_conflict", "Idempotency-Key reused with a different request body")],
    ),
    429: (
        "The key's per-minute or per-hour limit, or the account's monthly cap: nothing was processed or charged",
        [
            ("rate_limited", "Rate limit reached: 100 per 1 minute for this key"),
            ("monthly_cap", "Monthly usage cap of 1000 verifications reached; it resets at the start of next month"),
        ],
    ),
    500: (
        "A failure of ours, or an image that could not be judged: retry with the same Idempotency-Key",
        [("internal", "Internal error; it has been logged. Retry with the same Idempotency-Key")],
    ),
    503: (
        "The verdict is not ready within the wait (retry with the same Idempotency-Key), or a store is unreachable",
        [
            ("slow", "The verification is taking longer than usual; retry with the same Idempotency-Key"),
            ("auth_unavailable", "Authentication service unavailable; retry"),
        ],
    ),
}


def errors(*statuses: int) -> dict[int, ResponseSpec]:
    return openapi.error_responses(
        ErrorBody,
        {
            status: (ERRORS[status][0], [openapi.example(i, text, ErrorBody(text)) for i, text in ERRORS[status][1]])
            for status in statuses
        },
    )


MANAGEMENT = (401, 403, 429, 500, 503)
"""What every key, webhook and history route may answer besides its own."""

_RETRY = openapi.retry_after("Seconds to wait before retrying")

_POLICY = Schema(type=OpenAPIType.STRING, enum=list(POLICIES), description="The policy to check the image against")
VERIFY_BODY = RequestBody(
    required=True,
    description="The image as a file (multipart) or as base64 (JSON); JPEG, PNG or WebP, at most 10 MB.",
    content={
        "multipart/form-data": OpenAPIMediaType(
            schema=Schema(
                type=OpenAPIType.OBJECT,
                required=["image", "policy"],
                properties={
                    "image": Schema(type=OpenAPIType.STRING, format=OpenAPIFormat.BINARY),
                    "policy": _POLICY,
                },
            )
        ),
        "application/json": OpenAPIMediaType(
            schema=Schema(
                type=OpenAPIType.OBJECT,
                required=["image", "policy"],
                additional_properties=False,
                properties={
                    "image": Schema(
                        type=OpenAPIType.STRING,
                        min_length=1,
                        description="Raw base64, or a data URL `data:image/...;base64,...`",
                    ),
                    "policy": _POLICY,
                    "metadata": Schema(
                        one_of=[Schema(type=OpenAPIType.OBJECT), Schema(type=OpenAPIType.NULL)],
                        description="Free-form; echoed back in the verification",
                    ),
                },
            )
        ),
    },
)
_VERIFY = openapi.documented_operation(
    parameters=[
        openapi.header(
            "Idempotency-Key",
            Schema(type=OpenAPIType.STRING, min_length=1, max_length=255, pattern=r"^[\x20-\x7e]+$"),
            "Optional. A retry with the same key and body returns the original verification without re-running or "
            "re-billing it; the same key with another body is 422.",
            required=False,
            example="order-7731-photo",
        )
    ],
    request_body=VERIFY_BODY,
    response_headers={429: _RETRY, 503: _RETRY},
)
MANAGED = openapi.documented_operation(response_headers={429: _RETRY}, never_answered=[400])
MANAGED_WITH_BODY = openapi.documented_operation(response_headers={429: _RETRY})

VERIFY = openapi.route_docs(
    "verify",
    "Check an image against a policy",
    {
        200: openapi.response(Verification, "The verification with its verdict"),
        **errors(400, 401, 403, 422, 429, 500, 503),
    },
    operation=_VERIFY,
    status_code=200,
)
GET_IMAGE = openapi.route_docs(
    "getImage",
    "The image of a verification, by the signed URL in its `image_url` (no API key)",
    {200: openapi.response(bytes, "The image, as it was submitted", media_type="image/*"), **errors(403, 404, 500)},
    operation=openapi.documented_operation(
        parameters=openapi.signed_url_parameters(),
        never_answered=[400],
        keyless=True,
    ),
)
LIST_KEYS = openapi.route_docs(
    "listKeys",
    "List this account's keys, newest first (never the secret)",
    {200: openapi.response(KeyList, "The account's keys"), **errors(*MANAGEMENT)},
    operation=MANAGED,
)
CREATE_KEY = openapi.route_docs(
    "createKey",
    "Create a key; its secret is shown in this response only",
    {201: openapi.response(KeyCreated, "The new key, with `key` shown this once"), **errors(400, *MANAGEMENT)},
    body=CreateKeyRequest,
    operation=MANAGED_WITH_BODY,
)
REVOKE_KEY = openapi.route_docs(
    "revokeKey",
    "Revoke a key: at once and for good",
    {200: openapi.response(KeyRevoked, "The revoked key"), **errors(404, *MANAGEMENT)},
    operation=MANAGED,
    status_code=200,
)
LIST_VERIFICATIONS = openapi.route_docs(
    "listVerifications",
    "This account's verifications in the key's environment, newest first",
    {200: openapi.response(VerificationList, "A page"), **errors(400, 404, *MANAGEMENT)},
    operation=MANAGED_WITH_BODY,
)
GET_VERIFICATION = openapi.route_docs(
    "getVerification",
    "One verification",
    {200: openapi.response(Verification, "The verification"), **errors(404, *MANAGEMENT)},
    operation=MANAGED,
)
REVIEW = openapi.route_docs(
    "reviewVerification",
    "Record a human review; a changed verdict fires verification.reviewed",
    {200: openapi.response(Verification, "The verification after the review"), **errors(400, 404, 409, *MANAGEMENT)},
    body=ReviewRequest,
    operation=MANAGED_WITH_BODY,
    status_code=200,
)
CREATE_INSPECTION = openapi.route_docs(
    "createInspection",
    "Start a self-inspection: a single-use link for one recipient to take or upload a photo",
    {
        201: openapi.response(InspectionCreated, "The open inspection, with its `url` shown this once"),
        **errors(400, *MANAGEMENT),
    },
    body=CreateInspectionRequest,
    operation=MANAGED_WITH_BODY,
)
LIST_INSPECTIONS = openapi.route_docs(
    "listInspections",
    "This account's inspections in the key's environment, newest first",
    {200: openapi.response(InspectionList, "A page"), **errors(400, 404, *MANAGEMENT)},
    operation=MANAGED_WITH_BODY,
)
GET_INSPECTION = openapi.route_docs(
    "getInspection",
    "One inspection, with its verification once submitted",
    {200: openapi.response(Inspection, "The inspection"), **errors(404, *MANAGEMENT)},
    operation=MANAGED,
)
CANCEL_INSPECTION = openapi.route_docs(
    "cancelInspection",
    "Cancel an open inspection: its link takes nothing more",
    {200: openapi.response(Inspection, "The cancelled inspection"), **errors(404, 409, *MANAGEMENT)},
    operation=MANAGED,
    status_code=200,
)
