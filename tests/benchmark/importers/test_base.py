"""Streamed JSON reading: members and array items one at a time, errors located."""

import json

import pytest

from benchmark.importers.base import ImportFailed, iter_json_object


def test_iter_json_object_yields_members_and_array_items(tmp_path):
    data = {"part_c": [{"id": 1, "nested": [1, [2, {"x": None}]]}, "two", 3.5],
            "empty": [], "meta": {"a": [1, 2]}, "name": "x", "flag": True}
    path = tmp_path / "object.json"
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    assert list(iter_json_object(path)) == [
        ("part_c", 0, data["part_c"][0]), ("part_c", 1, "two"), ("part_c", 2, 3.5),
        ("empty", None, []), ("meta", None, {"a": [1, 2]}), ("name", None, "x"), ("flag", None, True),
    ]


def test_iter_json_object_refuses_other_documents_and_locates_syntax_errors(tmp_path):
    path = tmp_path / "list.json"
    path.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ImportFailed, match=r"^list\.json: expected a JSON object$"):
        list(iter_json_object(path))
    path.write_text('{"a": [1,\n  2,,\n 3]}', encoding="utf-8")
    with pytest.raises(ImportFailed, match=r"^where/list\.json, line 2, column 5: malformed JSON: "):
        list(iter_json_object(path, name="where/list.json"))


def test_iter_json_object_limits_each_member(tmp_path):
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"small": "x" * 10, "items": ["y" * 10, "z" * 300_000]}), encoding="utf-8")
    with pytest.raises(ImportFailed, match=r"^big\.json, field 'items\[1\]': longer than the 100,000-byte limit$"):
        list(iter_json_object(path, max_record_bytes=100_000))
    assert len(list(iter_json_object(path, max_record_bytes=400_000))) == 3
