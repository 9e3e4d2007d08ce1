"""OpenAPI details Litestar leaves out: request bodies refuse unknown fields, so say so."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec
from litestar._openapi.schema_generation.plugins.struct import StructSchemaPlugin

if TYPE_CHECKING:
    from litestar._openapi.schema_generation import SchemaCreator
    from litestar.openapi.spec import Schema
    from litestar.typing import FieldDefinition


class StrictStructSchemaPlugin(StructSchemaPlugin):
    """Litestar's msgspec Struct schemas, plus `additionalProperties: false` for Structs with
    `forbid_unknown_fields` (every `*Request`), so schema-driven clients and fuzzers know."""

    def to_openapi_schema(
        self, field_definition: FieldDefinition, schema_creator: SchemaCreator
    ) -> Schema:
        schema = super().to_openapi_schema(field_definition, schema_creator)
        info = msgspec.inspect.type_info(field_definition.type_)
        if isinstance(info, msgspec.inspect.StructType) and info.forbid_unknown_fields:
            schema.additional_properties = False
        return schema
