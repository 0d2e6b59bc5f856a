"""The helpdesk's OpenAPI document (`/docs/openapi.json`) declares every error it answers in the REST envelope
(`{"error": {"code", "message"}}`), never Litestar's own body, and every route's example errors fit it."""

from __future__ import annotations

import jsonschema_rs

from tests.helpdesk_stack import HelpdeskStack


async def test_every_declared_error_body_is_the_envelope(helpdesk_stack: HelpdeskStack) -> None:
    document = (await helpdesk_stack.client.get("/docs/openapi.json")).json()
    envelope = document["components"]["schemas"]["ErrorBody"]
    assert envelope["required"] == ["error"]
    checked: list[tuple[str, str, str]] = []
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            if method not in ("get", "post", "patch", "put", "delete"):
                continue
            for status, response in operation["responses"].items():
                if int(status) < 400:
                    continue
                [(media_type, content)] = response["content"].items()
                assert media_type == "application/json", (method, path, status)
                assert content["schema"] == {"$ref": "#/components/schemas/ErrorBody"}, (method, path, status)
                fits = jsonschema_rs.validator_for({**content["schema"], "components": document["components"]})
                for example in content.get("examples", {}).values():
                    assert fits.is_valid(example["value"]), (method, path, status, example)
                checked.append((method, path, status))
    declared: set[tuple[str, str]] = {(method, path) for method, path, _ in checked}
    assert ("delete", "/api/v1/webhooks/{webhook_id}") in declared
    assert any(path == "/api/v1/webhooks/{webhook_id}/test" and status == "400" for _, path, status in checked)
