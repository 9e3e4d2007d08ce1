"""OpenAPI details Litestar leaves out: strict request bodies, struct descriptions, and the
`{ref}` and `{model}` parameters and request-body examples of every operation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from inspect import cleandoc
from typing import TYPE_CHECKING, Any

import msgspec
from litestar import get, post
from litestar._openapi.schema_generation.plugins.struct import StructSchemaPlugin
from litestar.handlers import HTTPRouteHandler
from litestar.openapi.spec import (
    Example,
    OpenAPIResponse,
    Operation,
    Parameter,
    Reference,
    RequestBody,
)
from litestar.types import AnyCallable

from service.api.problems import documented
from service.api.traits import LARGE_BODY
from service.api.wire.examples import EXAMPLES, Examples

if TYPE_CHECKING:
    from litestar._openapi.schema_generation import SchemaCreator
    from litestar.openapi.spec import Schema
    from litestar.typing import FieldDefinition

REF_DESCRIPTION = (
    "the tokenizer: `name` (its default version) or `name@version`; `GET /v1/tokenizers` lists them"
)
REF_EXAMPLES = {
    "default": Example(summary="a name: its default version", value="cl100k_base"),
    "pinned": Example(summary="an exact version", value="cl100k_base@1"),
}

MODEL_DESCRIPTION = (
    "the model: `name` (its default version, e.g. `gpt-4o`, `qwen3`), an alias of it, or "
    "`name@version`; `GET /v1/models` lists them"
)
MODEL_EXAMPLES = {
    "default": Example(summary="a name: its default version", value="gpt-4o"),
    "pinned": Example(summary="an exact version", value="gpt-4o@1"),
}
PARAMETERS = {"ref": (REF_DESCRIPTION, REF_EXAMPLES), "model": (MODEL_DESCRIPTION, MODEL_EXAMPLES)}


class StrictStructSchemaPlugin(StructSchemaPlugin):
    """Litestar's msgspec Struct schemas, plus `additionalProperties: false` for Structs with
    `forbid_unknown_fields` (every `*Request`), so schema-driven clients and fuzzers know, and
    the Struct's docstring as the schema's description."""

    def to_openapi_schema(
        self, field_definition: FieldDefinition, schema_creator: SchemaCreator
    ) -> Schema:
        schema = super().to_openapi_schema(field_definition, schema_creator)
        info = msgspec.inspect.type_info(field_definition.type_)
        if isinstance(info, msgspec.inspect.StructType) and info.forbid_unknown_fields:
            schema.additional_properties = False
        doc = getattr(field_definition.type_, "__doc__", None)
        if doc and schema.description is None:
            schema.description = cleandoc(doc)
        return schema


def _named(examples: Examples) -> dict[str, Example | Reference]:
    return {
        name: Example(summary=summary, value=value) for name, (summary, value) in examples.items()
    }


# by the name Litestar gives a body's schema while it builds operations (module path + class)
_BY_NAME = {f"{b.__module__}.{b.__qualname__}".replace(".", "_"): ex for b, ex in EXAMPLES.items()}


@dataclass
class DocumentedOperation(Operation):
    """The `operation_class` of every route: describes `{ref}` and `{model}` (with examples) and
    gives the request body and the 200 response the named examples `examples.EXAMPLES` holds for
    the body's type (found by the name of its schema)."""

    def __post_init__(self) -> None:
        for parameter in self.parameters or ():
            if isinstance(parameter, Parameter) and parameter.name in PARAMETERS:
                description, examples = PARAMETERS[parameter.name]
                parameter.description = description
                parameter.examples = dict(examples)
        if not isinstance(self.request_body, RequestBody):
            return
        (body,) = self.request_body.content.values()  # JSON, the only body type
        if not isinstance(body.schema, Reference):
            return
        requests, responses = _BY_NAME[body.schema.ref.rsplit("/", 1)[-1]]
        body.examples = _named(requests)
        ok = (self.responses or {}).get("200")
        if isinstance(ok, OpenAPIResponse):
            for media in (ok.content or {}).values():
                media.examples = _named(responses)


BODY_PROBLEMS = (400, 404, 408, 413, 422, 503)  # what a route with a body and a `{ref}` can answer


Decorator = Callable[[AnyCallable], HTTPRouteHandler]


def json_get(
    path: str,
    *,
    name: str,
    tag: str,
    summary: str,
    returns: str,
    problems: tuple[int, ...] = (503,),
    traits: tuple[str, ...] = (),
) -> Decorator:
    """A GET operation answering JSON, declared once: its metrics name (`operation`), its docs
    (tag, summary, what it returns; the handler's docstring is its description), the problem
    statuses it can answer and its `traits` (`service.api.traits`)."""
    return _operation(
        get,
        path,
        name=name,
        tag=tag,
        summary=summary,
        returns=returns,
        problems=problems,
        traits=traits,
        sync_to_thread=False,
    )


def json_post(
    path: str,
    *,
    name: str,
    tag: str,
    summary: str,
    returns: str,
    problems: tuple[int, ...] = BODY_PROBLEMS,
) -> Decorator:
    """A POST operation taking and answering JSON (status 200), declared as `json_get` is; its
    body counts against the worker's request budget (`traits.LARGE_BODY`)."""
    return _operation(
        post,
        path,
        name=name,
        tag=tag,
        summary=summary,
        returns=returns,
        problems=problems,
        traits=(LARGE_BODY,),
        status_code=200,
    )


def _operation(
    kind: type[HTTPRouteHandler],
    path: str,
    *,
    name: str,
    tag: str,
    summary: str,
    returns: str,
    problems: tuple[int, ...],
    traits: tuple[str, ...],
    **options: Any,
) -> Decorator:
    opt: dict[str, Any] = {"operation": name, **dict.fromkeys(traits, True)}

    def declare(fn: AnyCallable) -> HTTPRouteHandler:
        description = " ".join((fn.__doc__ or "").split()) or None  # the docstring, one line
        return kind(
            path,
            opt=opt,
            responses=documented(*problems),
            tags=[tag],
            summary=summary,
            description=description,
            response_description=returns,
            operation_class=DocumentedOperation,
            **options,
        )(fn)

    return declare
