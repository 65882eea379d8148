"""Converters between Connect data and Kafka bytes."""

from connectrt.converters.bytearray import ByteArrayConverter
from connectrt.converters.headers import SimpleHeaderConverter
from connectrt.converters.json import JsonConverter
from connectrt.converters.string import StringConverter

__all__ = ["ByteArrayConverter", "JsonConverter", "SimpleHeaderConverter", "StringConverter"]
