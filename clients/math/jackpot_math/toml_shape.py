"""TOML tables read as the admin API's requests: every key checked against the request's fields (names and types)
before google.protobuf.json_format.ParseDict reads it, so that an error names the TOML key path and its value."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.json_format import ParseDict, ParseError
from google.protobuf.message import Message

from jackpotd.domain.errors import shown

M = TypeVar("M", bound=Message)
INT_TYPES = {FieldDescriptor.TYPE_INT64: 63, FieldDescriptor.TYPE_INT32: 31, FieldDescriptor.TYPE_UINT32: 32,
             FieldDescriptor.TYPE_UINT64: 64, FieldDescriptor.TYPE_SINT64: 63, FieldDescriptor.TYPE_SINT32: 31}


class BadInput(ValueError):
    """A file or flag that does not make a link or a change; the message names the key and its value
    (`rates.pools[0].ppm=-5: …`). jackpot-math exits 2 on it."""


def bad(key: str, value: object, reason: str) -> BadInput:
    """The error for `key` holding `value`, as the domain's errors say it: `key=value: reason`."""
    return BadInput(f"{key}={shown(value)}: {reason}")


def read_toml(path: Path) -> tuple[bytes, dict[str, Any]]:
    """A TOML file's bytes and document; BadInput naming the file when it cannot be read or is not TOML."""
    try:
        raw = path.read_bytes()
        return raw, tomllib.loads(raw.decode("utf-8"))
    except OSError as e:
        raise BadInput(f"{path}: cannot read it: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise BadInput(f"{path}: not TOML: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as e:
        raise BadInput(f"{path}: not TOML: {e}") from None


def _known(descriptor: Any) -> str:
    return ", ".join(f.name for f in descriptor.fields)


def _scalar(key: str, value: object, field: FieldDescriptor) -> None:
    """A scalar of the field's type: integers whole and in range (never a float: money and rates are integers)."""
    if field.type in INT_TYPES:
        bits = INT_TYPES[field.type]
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad(key, value, "must be a whole number (cents, µ¢ and ppm are integers)")
        low = 0 if field.type in (FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_UINT64) else -(1 << bits)
        if not low <= value < (1 << bits):
            raise bad(key, value, f"out of range for a {bits + 1}-bit integer")
    elif field.type == FieldDescriptor.TYPE_STRING:
        if not isinstance(value, str):
            raise bad(key, value, "must be a string (in quotes)")
    elif field.type == FieldDescriptor.TYPE_BOOL:
        if not isinstance(value, bool):
            raise bad(key, value, "must be true or false")
    else:  # enums, bytes, floats: none in the requests read from files
        raise bad(key, value, "this field cannot be given in a file")


def check_shape(doc: Mapping[str, Any], descriptor: Any, where: str = "") -> None:
    """Every key of `doc` a field of `descriptor`, with a value of its type, recursively; BadInput naming the key
    path (`rates.pools[0].ppm`) otherwise. (`descriptor`: a protobuf Descriptor, typed Any: upb's and the pure
    Python one are different classes to mypy.)"""
    for name, value in doc.items():
        key = f"{where}{name}"
        field = descriptor.fields_by_name.get(name)
        if field is None:
            raise bad(key, value, f"unknown key; known keys here: {_known(descriptor)}")
        repeated = field.is_repeated
        items = value if repeated else [value]
        if repeated and not isinstance(value, list):
            raise bad(key, value, "must be a list (an array, or [[tables]] of tables)")
        for i, item in enumerate(items):
            at = f"{key}[{i}]" if repeated else key
            if field.type == FieldDescriptor.TYPE_MESSAGE:
                if not isinstance(item, dict):
                    raise bad(at, item, f"must be a table with keys among: {_known(field.message_type)}")
                check_shape(item, field.message_type, f"{at}.")
            else:
                _scalar(at, item, field)


def message_of(doc: Mapping[str, Any], kind: type[M], where: str = "") -> M:
    """`doc` read into a `kind` request by ParseDict (field names as in the .proto), its shape checked first."""
    check_shape(doc, kind.DESCRIPTOR, where)
    try:
        return ParseDict(dict(doc), kind())
    except ParseError as e:  # check_shape has refused what ParseDict would: kept as a last word
        raise BadInput(f"{where.rstrip('.') or kind.DESCRIPTOR.name}: {e}") from None


def table_at(doc: Mapping[str, Any], key: str) -> dict[str, Any]:
    """The TOML table `doc[key]` ({} when absent); BadInput when it is not a table."""
    value = doc.get(key, {})
    if not isinstance(value, dict):
        raise bad(key, value, "must be a table ([" + key + "])")
    return value


def tables_at(doc: Mapping[str, Any], key: str) -> list[dict[str, Any]]:
    """The array of tables `doc[key]` ([] when absent); BadInput when it is not one."""
    value = doc.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise bad(key, value, f"must be an array of tables ([[{key}]])")
    return value
