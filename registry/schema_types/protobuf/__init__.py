"""Protobuf schemas (proto2 and proto3): compiled by protoc, printed and compared as
Confluent does. See schema.py for the public interface, compiler.py for how protoc runs.
"""
from registry.schema_types.protobuf.schema import PROTOBUF, ProtobufSchema, ProtobufType

__all__ = ["PROTOBUF", "ProtobufSchema", "ProtobufType"]
