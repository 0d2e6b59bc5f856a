"""The AsyncAPI 3 document of every service's topics, built from the msgspec message types (FastStream's generator
does not accept msgspec Structs)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec


@dataclass(frozen=True, slots=True)
class Channel:
    """One topic: the one message type it carries, what it is for, and what its records are keyed by."""

    message: type[msgspec.Struct]
    description: str
    key: str


def asyncapi_document(channels: Mapping[str, Channel], version: str) -> dict[str, Any]:
    """`channels`: full topic name -> Channel, of every service."""
    (schemas, components) = msgspec.json.schema_components(
        [channel.message for channel in channels.values()], ref_template="#/components/schemas/{name}"
    )
    document_channels: dict[str, Any] = {}
    operations: dict[str, Any] = {}
    messages: dict[str, Any] = {}
    for (address, channel), schema in zip(channels.items(), schemas, strict=True):
        message_name = schema["$ref"].rsplit("/", 1)[1]
        name = address.replace(".", "_")
        messages[message_name] = {
            "name": message_name,
            "contentType": "application/json",
            "payload": schema,
            "description": (channel.message.__doc__ or "").strip(),
        }
        document_channels[name] = {
            "address": address,
            "description": channel.description,
            "messages": {message_name: {"$ref": f"#/components/messages/{message_name}"}},
            "bindings": {"kafka": {"bindingVersion": "0.5.0"}},
        }
        operations[f"receive_{name}"] = {
            "action": "receive",
            "channel": {"$ref": f"#/channels/{name}"},
            "bindings": {"kafka": {"key": {"type": "string", "description": channel.key}}},
        }
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": "signalyard topics",
            "version": version,
            "description": "Messages between signalyard gateways, processors and stream consumers. "
            "Records of one key stay in order.",
        },
        "defaultContentType": "application/json",
        "channels": document_channels,
        "operations": operations,
        "components": {"messages": messages, "schemas": components},
    }
