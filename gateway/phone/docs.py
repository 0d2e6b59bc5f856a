"""How the phone API is documented (`/docs/openapi.json`): each route's operation with every status and real error
examples, and the headers and query parameters routes read themselves (gateway.common.openapi says why)."""

from __future__ import annotations

from litestar.openapi import ResponseSpec
from litestar.openapi.spec import Link, OpenAPIFormat, OpenAPIType, Schema

from gateway.common import openapi
from gateway.common.app import ApiDocument
from gateway.phone.auth import KEY_HEADER
from gateway.phone.errors import STATUS, ErrorEnvelope
from gateway.phone.schemas import (
    ERROR_EXAMPLES,
    FAILURE_EXAMPLE,
    PENDING_EXAMPLE,
    USAGE_EXAMPLE,
    VERIFY_REQUEST_EXAMPLES,
    VERIFY_RESULT_EXAMPLES,
    Pending,
    UsageSummary,
    VerifyRequest,
)
from topics.phone import StoredRequestFailure, VerifyResult

DOCUMENT = ApiDocument(
    "signalyard phone verification",
    "2026-10-15.2",
    "A US phone number and a supplied name in; carrier, line type, caller-ID name, name match and billing out. Test "
    "keys (`sy_test_...`) run against a deterministic sandbox that never calls a paid provider; live keys "
    "(`sy_live_...`) perform real lookups and are metered.",
    ("bearer", KEY_HEADER.security_scheme("`Authorization: Bearer sy_test_...` (sandbox) or `Bearer sy_live_...`")),
)

# The OpenAPI document (`/docs/openapi.json`). The routes read their headers, query and body themselves, in the order
# the contract fixes; what they read is declared here for the document only (gateway.common.openapi).

ERROR_DESCRIPTIONS = {
    400: "`invalid_request` (`details.field` names the offending body property, header or parameter) or "
    "`missing_idempotency_key`",
    401: "`unauthorized`: no API key, or an unknown, revoked or expired one",
    403: "`tenant_suspended`, `forbidden_scope` (the key lacks the route's scope) or `forbidden_sku`",
    404: "`not_found`",
    409: "`idempotency_conflict`: the Idempotency-Key was used with a different body, or the number has a check "
    "still pending or awaiting reconciliation (`request_id` names it)",
    413: "`invalid_request`: the body is over the size limit",
    422: "`invalid_phone` or `unsupported_country` (US numbers only)",
    429: "`rate_limited` or `spend_cap_reached`; wait `Retry-After` seconds",
    500: "`internal_error`: a failure of ours (no internals are shown; the details go to our log)",
    502: "`provider_unavailable`: the provider failed after retries; not billed, stored as a failed request",
    503: "`enforcement_unavailable` (the API key, the rate limit or the spend cap cannot be checked), "
    "`provider_unconfigured` or `ledger_unavailable`",
}


def errors(*example_ids: str, statuses: tuple[int, ...] = ()) -> dict[int, ResponseSpec]:
    """Error responses of a route: the statuses of these examples (and `statuses` without one), each example under
    the status of its code (`too_large`: 413)."""
    by_status: dict[int, list[str]] = {status: [] for status in statuses}
    for example_id in example_ids:
        code = ERROR_EXAMPLES[example_id][1].error.code
        by_status.setdefault(413 if example_id == "too_large" else STATUS[code], []).append(example_id)
    return openapi.error_responses(
        ErrorEnvelope,
        {
            status: (
                ERROR_DESCRIPTIONS[status],
                [openapi.example(i, ERROR_EXAMPLES[i][0], ERROR_EXAMPLES[i][1]) for i in ids],
            )
            for status, ids in sorted(by_status.items())
        },
    )


RESULTS = [openapi.example(i, summary, result) for i, (summary, result) in VERIFY_RESULT_EXAMPLES.items()]
PENDING = [openapi.example("pending", "Still being processed: poll GET /requests/{id}", PENDING_EXAMPLE)]
TO_REQUEST = {
    "getRequest": Link(
        operation_id="getRequest",
        parameters={"request_id": "$response.body#/request_id"},
        description="The request, by the id of this answer: how a pending request is polled",
    )
}
_VERIFY = openapi.documented_operation(
    parameters=[
        openapi.header(
            "Idempotency-Key",
            Schema(
                type=OpenAPIType.STRING,
                min_length=1,
                max_length=128,
                pattern=r"^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$",
            ),
            "Unique per logical request: 1 to 128 printable ASCII characters (HTTP drops spaces at either end). "
            "Sending the same key and body again returns the original answer and is never billed twice; the same "
            "key with another body is 409 `idempotency_conflict`.",
            required=True,
            example="order-7731-phone-check",
        )
    ],
    body_examples=[openapi.example(i, summary, body) for i, (summary, body) in VERIFY_REQUEST_EXAMPLES.items()],
    response_headers={
        429: openapi.retry_after("Seconds to wait: the rate limit's window, or the time to the next UTC month")
    },
    links={200: TO_REQUEST, 202: TO_REQUEST},
)
_USAGE = openapi.documented_operation(
    parameters=[
        openapi.query(
            "from",
            Schema(type=OpenAPIType.STRING, format=OpenAPIFormat.DATE),
            "Inclusive start date (UTC). Defaults to the first day of the month of `to` when only `to` is given, "
            "else to the first day of the current month. Must not be after `to` (today when `to` is absent).",
            example="2026-11-01",
        ),
        openapi.query(
            "to",
            Schema(type=OpenAPIType.STRING, format=OpenAPIFormat.DATE),
            "Inclusive end date (UTC). Defaults to today.",
            example="2026-11-30",
        ),
    ]
)

VERIFY = openapi.route_docs(
    "verify",
    "Verify a US phone number against a supplied name",
    {
        200: openapi.response(VerifyResult, "A completed check, or an explicit `unavailable` result", RESULTS),
        202: openapi.response(Pending, "Still being processed: poll `GET /requests/{id}`", PENDING),
        **errors(
            "invalid_body",
            "invalid_json",
            "missing_idempotency_key",
            "malformed_idempotency_key",
            "missing_key",
            "invalid_key",
            "forbidden_scope_verify",
            "forbidden_sku",
            "tenant_suspended",
            "idempotency_conflict",
            "open_check",
            "too_large",
            "invalid_phone",
            "unsupported_country",
            "rate_limited",
            "spend_cap_reached",
            "internal_error",
            "provider_unavailable",
            "enforcement_unavailable",
            "keys_unavailable",
            "provider_unconfigured",
            "ledger_unavailable",
        ),
    },
    description="Waits for the result up to a few seconds; past that, answers 202 with a Pending body: poll "
    "`GET /requests/{id}`, or send the same request again with the same Idempotency-Key.",
    body=VerifyRequest,
    operation=_VERIFY,
    status_code=200,
)
GET_REQUEST = openapi.route_docs(
    "getRequest",
    "Fetch a previous request",
    {
        200: openapi.response(
            VerifyResult | StoredRequestFailure,
            "A verification result, or a stored failure (`status` `failed`, `rejected` or `pending_reconciliation`, "
            "with its `error`)",
            [*RESULTS, openapi.example("failed", "A request the provider failed; not billed", FAILURE_EXAMPLE)],
        ),
        202: openapi.response(Pending, "Still pending", PENDING),
        **errors(
            "missing_key",
            "invalid_key",
            "forbidden_scope_requests",
            "tenant_suspended",
            "not_found",
            "internal_error",
            "keys_unavailable",
        ),
    },
    operation=openapi.documented_operation(never_answered=[400]),
)
GET_USAGE = openapi.route_docs(
    "getUsage",
    "Usage summary for the calling key's tenant and environment",
    {
        200: openapi.response(
            UsageSummary, "Usage summary", [openapi.example("usage", "November so far", USAGE_EXAMPLE)]
        ),
        **errors(
            "invalid_date",
            "from_after_to",
            "missing_key",
            "invalid_key",
            "forbidden_scope_usage",
            "tenant_suspended",
            "internal_error",
            "keys_unavailable",
        ),
    },
    operation=_USAGE,
)
