"""The OpenAPI document (`/docs/openapi.json`) describes every route as the contract does: bodies, headers, query
parameters, every status with its body, enums and formats, and real examples that match their own schemas."""

from __future__ import annotations

from typing import Any

import jsonschema_rs
import pytest
import schemathesis

from gateway.phone.errors import STATUS
from tests.contract.phone.helpers import ERROR_CODES, assert_error, assert_names_field, person, post_raw
from tests.phone_stack import Stack

DOCUMENTED_STATUSES = {
    ("post", "/v1/verify"): {200, 202, 400, 401, 403, 409, 413, 422, 429, 500, 502, 503},
    ("get", "/v1/requests/{request_id}"): {200, 202, 401, 403, 404, 500, 503},
    ("get", "/v1/usage"): {200, 400, 401, 403, 500, 503},
}
"""Section 7's statuses of each endpoint, plus what any route may answer (500; 503 when its API keys cannot be
checked) and a body over the limit (413)."""
CONTRACT_STATUSES = {
    ("post", "/v1/verify"): {200, 202, 400, 401, 403, 409, 422, 429, 500, 502, 503},
    ("get", "/v1/requests/{request_id}"): {200, 202, 401, 403, 404, 500, 503},
    ("get", "/v1/usage"): {200, 400, 401, 403},
}
"""Section 7, "Status codes by endpoint"."""


@pytest.fixture
async def document(stack: Stack) -> dict[str, Any]:
    response = await stack.client.get("/docs/openapi.json")
    assert response.status_code == 200, response.text
    return response.json()


def operation(document: dict[str, Any], method: str, path: str) -> dict[str, Any]:
    return document["paths"][path][method]


def component(document: dict[str, Any], name: str) -> dict[str, Any]:
    return document["components"]["schemas"][name]


def validator(document: dict[str, Any], schema: dict[str, Any]) -> jsonschema_rs.Validator:
    """A JSON Schema validator of `schema`, its `$ref`s resolved in the document, formats checked."""
    return jsonschema_rs.validator_for({**schema, "components": document["components"]}, validate_formats=True)


def string_member(schema: dict[str, Any]) -> dict[str, Any]:
    """A string property's schema, or the string member of an optional one (`oneOf` string / null)."""
    if schema.get("type") == "string":
        return schema
    (member,) = [member for member in schema.get("oneOf", []) if member.get("type") == "string"]
    return member


async def test_the_document_is_valid_openapi_3_1_at_the_contract_version(document: dict[str, Any]) -> None:
    assert document["openapi"].startswith("3.1")
    assert document["info"]["version"] == "2026-10-15.2"
    schemathesis.openapi.from_dict(document).validate()
    assert set(document["paths"]) == {"/v1/verify", "/v1/requests/{request_id}", "/v1/usage"}


async def test_every_operation_requires_the_bearer_key(document: dict[str, Any]) -> None:
    schemes = document["components"]["securitySchemes"]
    assert schemes["bearer"]["type"] == "http"
    assert schemes["bearer"]["scheme"] == "bearer"
    assert document["security"] == [{"bearer": []}]
    for method, path in DOCUMENTED_STATUSES:
        assert operation(document, method, path).get("security", document["security"]) == [{"bearer": []}]


async def test_verify_documents_its_required_json_body_with_examples(document: dict[str, Any]) -> None:
    body = operation(document, "post", "/v1/verify")["requestBody"]
    assert body["required"] is True
    content = body["content"]["application/json"]
    assert content["schema"] == {"$ref": "#/components/schemas/VerifyRequest"}
    examples = content["examples"]
    assert examples
    check = validator(document, content["schema"])
    for name, example in examples.items():
        assert check.is_valid(example["value"]), (name, example)
        assert example.get("summary"), name


async def test_the_verify_body_schema_is_section_2_1(document: dict[str, Any]) -> None:
    schema = component(document, "VerifyRequest")
    assert set(schema["properties"]) == {"phone", "name", "subject_type", "reference_id", "add_ons"}
    assert sorted(schema["required"]) == ["name", "phone", "subject_type"]
    assert schema["additionalProperties"] is False  # "No properties other than these are allowed."
    properties = schema["properties"]
    assert properties["phone"]["type"] == "string"
    assert properties["phone"]["format"] == "phone-number"
    assert (properties["name"]["minLength"], properties["name"]["maxLength"]) == (1, 200)
    assert properties["reference_id"]["maxLength"] == 128
    assert properties["subject_type"]["enum"] == ["person", "business"]
    assert properties["add_ons"]["maxItems"] == 1
    assert properties["add_ons"]["items"] == {"type": "string", "const": "core_phone"}


async def test_verify_declares_the_idempotency_key_header_required(document: dict[str, Any]) -> None:
    parameters = operation(document, "post", "/v1/verify")["parameters"]
    (key,) = [parameter for parameter in parameters if parameter["name"] == "Idempotency-Key"]
    assert key["in"] == "header"
    assert key["required"] is True
    assert key["schema"]["type"] == "string"
    assert (key["schema"]["minLength"], key["schema"]["maxLength"]) == (1, 128)
    assert validator(document, key["schema"]).is_valid(key["example"])
    assert not validator(document, key["schema"]).is_valid("tab\there")


async def test_usage_declares_from_and_to_as_optional_dates(document: dict[str, Any]) -> None:
    parameters = {parameter["name"]: parameter for parameter in operation(document, "get", "/v1/usage")["parameters"]}
    assert set(parameters) == {"from", "to"}
    for parameter in parameters.values():
        assert parameter["in"] == "query"
        assert parameter.get("required", False) is False
        assert parameter["schema"] == {"type": "string", "format": "date"}
        assert validator(document, parameter["schema"]).is_valid(parameter["example"])


async def test_get_request_declares_its_id_as_a_uuid_path_parameter(document: dict[str, Any]) -> None:
    (parameter,) = operation(document, "get", "/v1/requests/{request_id}")["parameters"]
    assert (parameter["name"], parameter["in"], parameter["required"]) == ("request_id", "path", True)
    assert parameter["schema"]["type"] == "string"
    assert parameter["schema"]["format"] == "uuid"


@pytest.mark.parametrize(("method", "path"), list(DOCUMENTED_STATUSES))
async def test_every_status_the_route_answers_is_documented_and_the_contracts_are_among_them(
    document: dict[str, Any], method: str, path: str
) -> None:
    documented = {int(status) for status in operation(document, method, path)["responses"]}
    assert documented == DOCUMENTED_STATUSES[(method, path)]
    assert CONTRACT_STATUSES[(method, path)] <= documented


@pytest.mark.parametrize(("method", "path"), list(DOCUMENTED_STATUSES))
async def test_every_error_status_documents_the_envelope_with_examples_of_its_codes(
    document: dict[str, Any], method: str, path: str
) -> None:
    for status, response in operation(document, method, path)["responses"].items():
        if int(status) < 400:
            continue
        content = response["content"]["application/json"]
        assert content["schema"] == {"$ref": "#/components/schemas/ErrorEnvelope"}, (status, content)
        assert response["description"], status
        check = validator(document, content["schema"])
        for name, example in (content.get("examples") or {}).items():
            assert check.is_valid(example["value"]), (status, name)
            code = example["value"]["error"]["code"]
            assert code in ERROR_CODES
            assert STATUS[code] == int(status) or (int(status), code) == (413, "invalid_request"), (status, name)
        if int(status) != 503 or method == "post":  # GET /requests: 503 is the contract's; no route of ours gives it
            assert content.get("examples"), (method, path, status)


async def test_the_error_envelope_is_section_7(document: dict[str, Any]) -> None:
    envelope = component(document, "ErrorEnvelope")
    assert envelope["required"] == ["error"]
    assert envelope["properties"]["error"] == {"$ref": "#/components/schemas/ErrorBody"}
    body = component(document, "ErrorBody")
    assert sorted(body["required"]) == ["code", "message"]
    assert set(body["properties"]) == {"code", "message", "request_id", "details"}


async def test_a_rate_limited_answer_documents_retry_after(document: dict[str, Any]) -> None:
    header = operation(document, "post", "/v1/verify")["responses"]["429"]["headers"]["Retry-After"]
    assert header["required"] is True
    assert header["schema"] == {"type": "integer", "minimum": 1}


async def test_verify_documents_a_body_over_the_limit(document: dict[str, Any]) -> None:
    too_large = operation(document, "post", "/v1/verify")["responses"]["413"]["content"]["application/json"]
    assert {example["value"]["error"]["code"] for example in too_large["examples"].values()} == {"invalid_request"}


async def test_every_response_example_matches_its_schema(document: dict[str, Any]) -> None:
    checked = 0
    for method, path in DOCUMENTED_STATUSES:
        for status, response in operation(document, method, path)["responses"].items():
            content = response["content"]["application/json"]
            check = validator(document, content["schema"])
            for name, example in (content.get("examples") or {}).items():
                errors = [error.message for error in check.iter_errors(example["value"])]
                assert not errors, (method, path, status, name, errors)
                checked += 1
    assert checked >= 30


async def test_successful_answers_have_real_examples(document: dict[str, Any]) -> None:
    verify = operation(document, "post", "/v1/verify")["responses"]
    results = verify["200"]["content"]["application/json"]["examples"]
    completed = next(
        example["value"] for example in results.values() if example["value"]["result_state"] == "completed"
    )
    assert completed["subject"]["phone_e164"] == "+14155550100"
    assert completed["subject"]["supplied_name"] == "John Smith"
    assert completed["caller_id"]["name"] == "SMITH JOHN"
    assert completed["name_match"]["state"] == "match"
    assert verify["202"]["content"]["application/json"]["examples"]
    usage = operation(document, "get", "/v1/usage")["responses"]["200"]["content"]["application/json"]
    assert usage["schema"] == {"$ref": "#/components/schemas/UsageSummary"}
    assert usage["examples"]
    request = operation(document, "get", "/v1/requests/{request_id}")["responses"]["200"]["content"]
    statuses = {example["value"].get("status") for example in request["application/json"]["examples"].values()}
    assert "failed" in statuses  # a stored failure is one of the 200 bodies


async def test_results_declare_their_formats(document: dict[str, Any]) -> None:
    result = component(document, "VerifyResult")["properties"]
    assert result["request_id"]["format"] == "uuid"
    assert result["created_at"]["format"] == "date-time"
    assert string_member(result["completed_at"])["format"] == "date-time"
    assert component(document, "Provenance")["properties"]["attempted_at"]["format"] == "date-time"
    assert component(document, "StoredRequestFailure")["properties"]["request_id"]["format"] == "uuid"
    assert component(document, "Pending")["properties"]["request_id"]["format"] == "uuid"
    usage = component(document, "UsageSummary")["properties"]
    assert usage["tenant_id"]["format"] == "uuid"
    period = component(document, "Period")["properties"]
    assert period["from"]["format"] == period["to"]["format"] == "date-time"


async def test_results_declare_the_contracts_enums(document: dict[str, Any]) -> None:
    def enum(schema: str, field: str) -> list[str]:
        return component(document, schema)["properties"][field]["enum"]

    assert enum("VerifyResult", "result_state") == ["completed", "unavailable", "error"]
    assert enum("VerifyResult", "environment") == ["live", "test"]
    assert enum("Phone", "line_type") == ["mobile", "landline", "voip", "toll_free", "premium", "pager", "unknown"]
    assert enum("Phone", "carrier_type") == ["wireless", "landline", "voip", "unknown"]
    assert enum("CallerIdView", "state") == ["available", "placeholder", "unavailable", "error"]
    assert enum("NameMatchView", "state") == ["match", "partial_match", "mismatch", "ambiguous", "unavailable"]
    assert enum("Billing", "disposition") == ["billable", "not_billable", "pending_reconciliation"]
    assert enum("StoredRequestFailure", "status") == ["failed", "rejected", "pending_reconciliation"]
    assert enum("Provenance", "provider") == ["carrier_lookup", "sandbox"]
    assert component(document, "Pending")["properties"]["status"]["const"] == "pending"


async def test_a_verify_answer_links_to_the_request_it_names(document: dict[str, Any]) -> None:
    responses = operation(document, "post", "/v1/verify")["responses"]
    for status in ("200", "202"):
        link = responses[status]["links"]["getRequest"]
        assert link["operationId"] == "getRequest"
        assert link["parameters"] == {"request_id": "$response.body#/request_id"}


# What the document declares changes nothing the service does: the route still reads the body and the headers itself,
# in the contract's order (Litestar, were it to decode them, would answer first and with its own errors).


async def test_a_documented_body_is_read_only_after_the_key_and_the_idempotency_key(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    no_key = await stack.client.post("/v1/verify", content=b"{", headers={"Idempotency-Key": "k"})
    assert_error(no_key, 401, "unauthorized")
    no_idempotency_key = await stack.client.post(
        "/v1/verify", content=b"{", headers={"Authorization": f"Bearer {tenant.test_key}"}
    )
    assert_error(no_idempotency_key, 400, "missing_idempotency_key")
    error = assert_error(await post_raw(stack, tenant.test_key, b'{"phone": 1}'), 400, "invalid_request")
    assert_names_field(error, "phone")


# What the document promises, the service keeps.


@pytest.mark.parametrize("day", ["0001-01-01", "9999-12-31"])
async def test_usage_accepts_every_date_its_format_admits(stack: Stack, day: str) -> None:
    tenant = await stack.new_tenant()
    response = await stack.get(tenant.test_key, "/v1/usage", **{"from": day, "to": day})
    assert response.status_code == 200, response.text
    assert response.json()["period"]["to"] == f"{day}T23:59:59.999999Z"


@pytest.mark.parametrize("field", ["name", "reference_id"])
async def test_a_nul_character_the_document_rules_out_is_invalid_request(stack: Stack, field: str) -> None:
    tenant = await stack.new_tenant()
    error = assert_error(
        await stack.verify(tenant.test_key, person(**{field: "John\x00Smith"})), 400, "invalid_request"
    )
    assert_names_field(error, field)


async def test_an_empty_date_parameter_is_invalid_request(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    error = assert_error(await stack.get(tenant.test_key, "/v1/usage", to=""), 400, "invalid_request")
    assert_names_field(error, "to")
