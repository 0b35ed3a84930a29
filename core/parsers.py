"""The API's JSON parser: DRF's, with the nesting depth of a request body bounded.

Python's ``json`` recurses once per nesting level, so a body of a few thousand ``[`` raises
``RecursionError`` (a 500) and, below that, deep values would reach code that walks them
recursively. No payload of this API nests anywhere near ``MAX_JSON_DEPTH``: deeper is a 400.
"""

from rest_framework import serializers
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

MAX_JSON_DEPTH = 32


def json_depth(value) -> int:
    """How deeply ``value`` nests lists and objects (a scalar is 0), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, level = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        deepest = max(deepest, level)
        if level > MAX_JSON_DEPTH:
            break
        stack.extend((child, level + 1) for child in children)
    return deepest


class BoundedJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            data = None
        else:
            if json_depth(data) <= MAX_JSON_DEPTH:
                return data
        raise ParseError(f"JSON parse error - nested deeper than {MAX_JSON_DEPTH} levels")


class BoundedJSONField(serializers.JSONField):
    """A JSON input field with the same bound: form posts (multipart, urlencoded) carry its
    value as JSON text, which this field parses itself, outside ``BoundedJSONParser``."""

    def to_internal_value(self, data):
        try:
            value = super().to_internal_value(data)
        except RecursionError:
            value = None
        else:
            if json_depth(value) <= MAX_JSON_DEPTH:
                return value
        raise serializers.ValidationError(f"nested deeper than {MAX_JSON_DEPTH} levels")
