"""The AsyncAPI 3 document of the topics, built from the msgspec message types (FastStream's generator
does not accept msgspec Structs)."""

from __future__ import annotations

from typing import Any

import msgspec

from topics import phone


def asyncapi_document(prefix: str = "") -> dict[str, Any]:
    names = list(phone.MESSAGES)
    (schemas, components) = msgspec.json.schema_components(
        list(phone.MESSAGES.values()), ref_template="#/components/schemas/{name}"
    )
    channels: dict[str, Any] = {}
    operations: dict[str, Any] = {}
    messages: dict[str, Any] = {}
    for name, schema in zip(names, schemas, strict=True):
        message_name = schema["$ref"].rsplit("/", 1)[1]
        channel = name.replace(".", "_")
        messages[message_name] = {
            "name": message_name,
            "contentType": "application/json",
            "payload": schema,
            "description": (phone.MESSAGES[name].__doc__ or "").strip(),
        }
        channels[channel] = {
            "address": prefix + name,
            "description": _topic_doc(name),
            "messages": {message_name: {"$ref": f"#/components/messages/{message_name}"}},
            "bindings": {"kafka": {"bindingVersion": "0.5.0"}},
        }
        operations[f"receive_{channel}"] = {
            "action": "receive",
            "channel": {"$ref": f"#/channels/{channel}"},
            "bindings": {"kafka": {"key": {"type": "string", "description": "the phone number in E.164"}}},
        }
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": "signalyard topics",
            "version": "2026-10-15.2",
            "description": "Messages between signalyard gateways, processors and stream consumers. "
            "Keys are the phone number in E.164, so one number's messages stay in order.",
        },
        "defaultContentType": "application/json",
        "channels": channels,
        "operations": operations,
        "components": {"messages": messages, "schemas": components},
    }


def _topic_doc(name: str) -> str:
    return {
        phone.VERIFICATION_REQUESTED: "A gateway accepted a verify request (stored as pending); processors consume it.",
        phone.VERIFICATION_COMPLETED: "A request reached its outcome; stream consumers may subscribe.",
    }[name]
