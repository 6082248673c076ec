"""JSON Schema (drafts 4, 6, 7, 2019-09 and 2020-12) as Confluent Schema Registry reads it.

Modules, in the order a schema goes through them:
- `jackson_text`: decoding with hostile-input limits; the stored (Jackson-compatible) text;
- `drafts`: which draft `$schema` names; validation against the draft's meta-schema;
- `references`: `$ref` resolution across the schema and its references, offline;
- `model`, `loader`: the graph of schema nodes, as Confluent's loaders build it;
- `compatibility`: Confluent's difference rules over two such graphs;
- `schema`: the `SchemaType` ("JSON") and `ParsedSchema` the registry uses.
"""
from registry.schema_types.json_schema.schema import JSON, JsonSchema, JsonSchemaType

__all__ = ["JSON", "JsonSchema", "JsonSchemaType"]
