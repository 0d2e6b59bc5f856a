"""The OpenAPI document of every gateway: what Litestar generates, completed where Litestar cannot see.

Routes read the raw request themselves, because a contract fixes the order of its checks (the key first, then the
headers, then the body): Litestar, which documents what a handler's signature declares, sees neither their body nor
their headers. `documented_body` and `documented_operation` declare them for the document only; nothing here changes
what a route accepts or answers. `MsgspecSchemaPlugin` carries what msgspec Structs say of themselves (formats,
no unknown properties) into the schemas, and `error_responses` documents a service's error envelope with real
examples instead of generated strings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, cast

import msgspec
import swagger_ui_bundle
from litestar import Router

# Litestar's own msgspec schema plugin, which MsgspecSchemaPlugin extends: private modules (litestar>=2.25,<3).
from litestar._openapi.schema_generation.plugins.struct import StructSchemaPlugin
from litestar._openapi.schema_generation.schema import SchemaCreator
from litestar.datastructures import CacheControlHeader
from litestar.di import Provide
from litestar.openapi import ResponseSpec
from litestar.openapi.plugins import OpenAPIRenderPlugin, SwaggerRenderPlugin
from litestar.openapi.spec import (
    Example,
    Link,
    OpenAPIFormat,
    OpenAPIHeader,
    OpenAPIResponse,
    OpenAPIType,
    Operation,
    Parameter,
    Reference,
    RequestBody,
    Schema,
)
from litestar.static_files import create_static_files_router
from litestar.typing import FieldDefinition

from gateway.common.auth import NO_AUTHENTICATION

JSON = "application/json"
DOCS_ASSETS = "/docs-assets"
"""Where a gateway serves the files of its documentation page."""


def docs_render_plugins() -> list[OpenAPIRenderPlugin]:
    """`/docs`: Swagger UI from the files the `swagger-ui-bundle` package ships, served by the gateway itself
    (`docs_assets`), so the page works offline and never changes under us (a CDN at `@latest` did both)."""
    return [
        SwaggerRenderPlugin(
            js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js",
            css_url=f"{DOCS_ASSETS}/swagger-ui.css",
            standalone_preset_js_url=f"{DOCS_ASSETS}/swagger-ui-standalone-preset.js",
            favicon=f"<link rel='icon' type='image/png' href='{DOCS_ASSETS}/favicon-32x32.png'>",
        )
    ]


def docs_assets() -> Router:
    """The Swagger UI files under DOCS_ASSETS: no key needed, cacheable for a day."""
    return create_static_files_router(
        DOCS_ASSETS,
        directories=[swagger_ui_bundle.swagger_ui_path],
        opt=NO_AUTHENTICATION,
        cache_control=CacheControlHeader(max_age=86400),
    )


class MsgspecSchemaPlugin(StructSchemaPlugin):
    """msgspec Structs as Litestar documents them, plus what Litestar leaves out: a field's `format` from
    `msgspec.Meta(extra_json_schema={"format": ...})` (msgspec's own JSON Schema, and so the AsyncAPI document, has
    it), and `additionalProperties: false` for a Struct with `forbid_unknown_fields` (any other property is refused).
    Give it to the app (`plugins=[MsgspecSchemaPlugin()]`): an app's plugins come before Litestar's own."""

    def to_openapi_schema(self, field_definition: FieldDefinition, schema_creator: SchemaCreator) -> Schema:
        schema = super().to_openapi_schema(field_definition, schema_creator)
        info = cast(msgspec.inspect.StructType, msgspec.inspect.type_info(field_definition.type_))
        if info.forbid_unknown_fields:
            schema.additional_properties = False
        # Rules across fields that a Struct states as class variables (checked by its route):
        # `one_of_required = (("a",), ("b",))`: exactly one of the alternatives is given;
        # `dependent_required = {"a": ("b",)}`: `a` only with `b`;
        # `never_together = {"a": 1, "b": True}`: not these values at once.
        struct = field_definition.type_
        if alternatives := getattr(struct, "one_of_required", None):
            schema.one_of = [Schema(required=list(names)) for names in alternatives]
        if dependent := getattr(struct, "dependent_required", None):
            schema.dependent_required = {name: list(needs) for name, needs in dependent.items()}
        if together := getattr(struct, "never_together", None):
            properties: dict[str, Schema | Reference] = {name: Schema(const=value) for name, value in together.items()}
            schema.schema_not = Schema(required=list(together), properties=properties)
        for field in info.fields:
            documented = (schema.properties or {}).get(field.encode_name)
            format_ = _extra_json_schema(field.type).get("format")
            target = _string_schema(documented)
            if format_ and target is not None:
                target.format = _format(format_)
            _constrain_items(documented, field.type)
        return schema


def _constrain_items(documented: Any, field_type: msgspec.inspect.Type) -> None:
    """A list of constrained strings (`list[Annotated[str, Meta(min_length=1, pattern=...)]]`): Litestar documents
    its items as any string; give them their length and pattern, so that a document-valid list is a valid one."""
    while isinstance(field_type, msgspec.inspect.Metadata | msgspec.inspect.UnionType):
        if isinstance(field_type, msgspec.inspect.Metadata):
            field_type = field_type.type
        else:
            field_type = next((t for t in field_type.types if isinstance(t, msgspec.inspect.ListType)), field_type)
            if isinstance(field_type, msgspec.inspect.UnionType):
                return
    if not isinstance(field_type, msgspec.inspect.ListType):
        return
    item = field_type.item_type
    item = item.type if isinstance(item, msgspec.inspect.Metadata) else item
    arrays = [documented, *(getattr(documented, "one_of", None) or [])]
    if not isinstance(item, msgspec.inspect.StrType):
        return
    for array in arrays:
        if isinstance(array, Schema) and array.type == OpenAPIType.ARRAY and isinstance(array.items, Schema):
            array.items.min_length = item.min_length
            array.items.max_length = item.max_length
            array.items.pattern = item.pattern


def _extra_json_schema(field_type: msgspec.inspect.Type) -> dict[str, Any]:
    """The `extra_json_schema` of a field's `msgspec.Meta`, through an optional (`X | None`)."""
    if isinstance(field_type, msgspec.inspect.UnionType):
        for member in field_type.types:
            if extra := _extra_json_schema(member):
                return extra
    if isinstance(field_type, msgspec.inspect.Metadata):
        return dict(field_type.extra_json_schema or {})
    return {}


def _string_schema(schema: Any) -> Schema | None:
    """The string schema of a property: itself, or the string member of a `oneOf` (an optional string)."""
    if not isinstance(schema, Schema):
        return None
    if schema.type == OpenAPIType.STRING:
        return schema
    for member in schema.one_of or []:
        if isinstance(member, Schema) and member.type == OpenAPIType.STRING:
            return member
    return None


def _format(name: str) -> OpenAPIFormat:
    """A format's name as Litestar's enum, or as itself when the enum lacks it (formats are an open set)."""
    try:
        return OpenAPIFormat(name)
    except ValueError:
        return cast(OpenAPIFormat, name)


def documented_body(struct: type[msgspec.Struct]) -> dict[str, Provide]:
    """Route dependencies that document `struct` as the route's required JSON body, for the document only.

    Litestar documents the `data` of the dependencies in a route's scope, but resolves only those the handler asks
    for: the handler never asks for this one, so Litestar never reads the body for it, and the route decodes the
    body itself, where its contract says (after the key and the headers). Use it as the route's `dependencies`."""

    def body(data: Any) -> None:  # pragma: no cover - never resolved
        return None

    body.__annotations__ = {"data": struct, "return": None}
    return {"documented_body": Provide(body, sync_to_thread=False)}


def documented_operation(
    *,
    parameters: Sequence[Parameter] = (),
    body_examples: Sequence[Example] = (),
    response_headers: Mapping[int, Mapping[str, OpenAPIHeader]] | None = None,
    links: Mapping[int, Mapping[str, Link]] | None = None,
    never_answered: Sequence[int] = (),
    request_body: RequestBody | None = None,
    keyless: bool = False,
) -> type[Operation]:
    """An `operation_class` for a route: Litestar's operation plus, for the document only, the header and query
    `parameters` the route reads itself, named examples of its JSON body, headers of its responses (`Retry-After`
    on a 429) and links from a response to the operations that take its values; minus the statuses Litestar
    documents by default that the route `never_answered` (a 400 for a path parameter any string satisfies). A
    `request_body` replaces the documented one (a body of several media types, such as multipart or JSON). A
    `keyless` route needs no credentials: `security: []` overrides the document's requirement (Litestar drops an
    empty `security` given to a route)."""
    headers = response_headers or {}
    response_links = links or {}

    @dataclasses.dataclass
    class DocumentedOperation(Operation):
        def __post_init__(self) -> None:
            self.parameters = [*(self.parameters or []), *parameters] or None
            if keyless:
                self.security = []
            if request_body is not None:
                self.request_body = request_body
            for status in never_answered:
                (self.responses or {}).pop(str(status), None)
            if body_examples:
                if not isinstance(self.request_body, RequestBody):
                    raise ValueError(f"operation {self.operation_id} documents no request body to give examples")
                for media_type in self.request_body.content.values():
                    media_type.examples = {_example_id(example): example for example in body_examples}
            for status, status_headers in headers.items():
                response = self._response(status)
                response.headers = {**(response.headers or {}), **status_headers}
            for status, status_links in response_links.items():
                response = self._response(status)
                response.links = {**(response.links or {}), **status_links}

        def _response(self, status: int) -> OpenAPIResponse:
            response = (self.responses or {}).get(str(status))
            if response is None:
                raise LookupError(f"operation {self.operation_id} documents no {status} response to complete")
            return cast(OpenAPIResponse, response)  # Litestar writes responses inline, never as references

    return DocumentedOperation


def route_docs(
    operation_id: str,
    summary: str,
    responses: Mapping[int, ResponseSpec],
    *,
    description: str | None = None,
    body: type[msgspec.Struct] | None = None,
    operation: type[Operation] = Operation,
    status_code: int | None = None,
) -> dict[str, Any]:
    """How a route is documented, as the keyword arguments of its decorator: `@get(path, guards=[...],
    **docs.LIST_KEYS)`. The route's module says what the route does; its service's docs module how it is shown. A
    `body` is documented as the route's JSON body (`documented_body`); `operation` completes the rest."""
    documented: dict[str, Any] = {
        "operation_id": operation_id,
        "summary": summary,
        "responses": dict(responses),
        "operation_class": operation,
    }
    if description is not None:
        documented["description"] = description
    if body is not None:
        documented["dependencies"] = documented_body(body)
    if status_code is not None:
        documented["status_code"] = status_code
    return documented


def _example_id(example: Example) -> str:
    if example.id is None:
        raise ValueError(f"a named example needs an id: {example.summary}")
    return example.id


def header(name: str, schema: Schema, description: str, *, required: bool, example: str) -> Parameter:
    """A request header a route reads itself (see `documented_operation`)."""
    return Parameter(
        name=name, param_in="header", schema=schema, description=description, required=required, example=example
    )


def query(name: str, schema: Schema, description: str, *, example: str, required: bool = False) -> Parameter:
    """A query parameter a route reads itself (see `documented_operation`)."""
    return Parameter(
        name=name, param_in="query", schema=schema, description=description, example=example, required=required
    )


@dataclasses.dataclass
class NamedExample(Example):
    """An example whose `value` is written as it is (Litestar drops every null in it, and then the example no longer
    matches its schema), and whose `id` is its key in the `examples` of a body, not a property of it (an OpenAPI
    Example Object has none)."""

    def to_schema(self) -> dict[str, Any]:
        schema = super().to_schema()
        schema.pop("id", None)
        if self.value is not None:
            schema["value"] = self.value
        return schema


def example(id_: str, summary: str, value: msgspec.Struct | Any) -> Example:
    """A named example; a Struct is given as the JSON the API sends (so an example cannot drift from its type)."""
    return NamedExample(id=id_, summary=summary, value=msgspec.to_builtins(value))


def error_responses(
    envelope: type[msgspec.Struct], statuses: Mapping[int, tuple[str, Sequence[Example]]]
) -> dict[int, ResponseSpec]:
    """`responses` of a route: for each status, its description and examples of the service's error envelope."""
    return {
        status: ResponseSpec(
            envelope, description=description, generate_examples=False, examples=list(examples) or None
        )
        for status, (description, examples) in statuses.items()
    }


def response(body: Any, description: str, examples: Sequence[Example] = (), *, media_type: str = JSON) -> ResponseSpec:
    """A documented success response with real examples (Litestar would otherwise generate random strings)."""
    return ResponseSpec(
        body, description=description, generate_examples=False, examples=list(examples) or None, media_type=media_type
    )


def retry_after(description: str) -> dict[str, OpenAPIHeader]:
    """The `Retry-After` header of a 429: whole seconds to wait."""
    return {
        "Retry-After": OpenAPIHeader(
            schema=Schema(type=OpenAPIType.INTEGER, minimum=1), description=description, required=True
        )
    }


def signed_url_parameters() -> list[Parameter]:
    """The query parameters of a signed, expiring URL (wire/signed_urls.py), as a route served by one documents them."""
    return [
        query(
            "expires",
            Schema(type=OpenAPIType.STRING, pattern=r"^[0-9]+$"),
            "When the URL stops working, in UNIX seconds (part of the signed URL)",
            example="1795514400",
            required=True,
        ),
        query(
            "signature",
            Schema(type=OpenAPIType.STRING, pattern=r"^[0-9a-f]{64}$"),
            "The URL's signature (part of the signed URL)",
            example="5b6c0f1e8a4d2c9b7e3f1a0d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a39",
            required=True,
        ),
    ]
