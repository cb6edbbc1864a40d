"""Reading the files a scenario names, bounded and strict: scenario and sweep files,
channel-profile files, layout CSVs.

Every file is read only if it is a regular file (a FIFO nobody writes, a device such
as ``/dev/zero`` or a directory is refused before it is opened), and at most its
size limit of bytes are read. YAML is parsed strictly: safe types only, no duplicate
keys, aliases adding at most :data:`MAX_ALIAS_NODES` nodes (an "alias bomb" of 1 KiB
expands to billions; a long literal list is no bomb). Every problem becomes a one-line
:class:`~netfl.errors.ScenarioError` naming the file.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from netfl.errors import ScenarioError

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_ALIAS_NODES",
    "excerpt",
    "read_bytes_bounded",
    "read_text_bounded",
    "parse_yaml_text",
    "read_yaml",
    "cached_per_file",
]

#: scenario, sweep and channel-profile files larger than this are refused (they are a
#: few KiB)
MAX_FILE_BYTES = 1 << 20
#: YAML nodes that aliases may add to a document when expanded
MAX_ALIAS_NODES = 100_000
#: kept for callers of the former name: the limit on nodes that aliases add
MAX_EXPANDED_NODES = MAX_ALIAS_NODES


def excerpt(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters: error lines stay short whatever the input."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 and n % (1 << 20) == 0 else f"{n:,} bytes"


def read_bytes_bounded(path: str | Path, limit: int, what: str = "file") -> bytes:
    """The bytes of the regular file ``path`` (at most ``limit``); ``ValueError`` says
    why not, in words to follow the path: missing, not a regular file (a directory, a
    FIFO, a device), too large, unreadable. The file type is checked before the file
    is opened, so a FIFO that nobody writes cannot block the read."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ValueError("file not found") from None
    except OSError as err:
        raise ValueError(f"cannot read ({err.strerror or err})") from None
    if stat.S_ISDIR(st.st_mode):
        raise ValueError("is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise ValueError("is not a regular file (a FIFO, socket or device)")
    if st.st_size > limit:
        raise ValueError(f"file is {st.st_size:,} bytes; a {what} is at most {_size(limit)}")
    try:
        with open(path, "rb") as f:
            raw = f.read(limit + 1)
    except OSError as err:
        raise ValueError(f"cannot read ({err.strerror or err})") from None
    if len(raw) > limit:  # (it grew since stat)
        raise ValueError(f"file is over {_size(limit)}; a {what} is at most {_size(limit)}")
    return raw


def read_text_bounded(path: str | Path, limit: int, what: str = "file") -> str:
    """:func:`read_bytes_bounded` decoded as UTF-8 text (a byte-order mark, as
    spreadsheets write it, is dropped); NUL bytes and other encodings are refused."""
    raw = read_bytes_bounded(path, limit, what)
    if b"\x00" in raw:
        raise ValueError("binary file, not text")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise ValueError(
            f"not UTF-8 text (byte 0x{raw[err.start]:02x} at offset {err.start})"
        ) from None


class _StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` (no Python objects) that rejects duplicate keys."""

    def construct_mapping(self, node, deep=False):
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                hash(key)
            except TypeError:
                continue  # the base constructor reports unhashable keys
            line = key_node.start_mark.line + 1
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"duplicate key {excerpt(key)} (lines {seen[key]} and {line})",
                    key_node.start_mark,
                )
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def _alias_nodes(root: yaml.Node) -> int:
    """Nodes that expanding the document's aliases adds to the nodes written in it
    (memoised, stops past the limit; a cycle counts as too many)."""
    limit = MAX_ALIAS_NODES + 1
    memo: dict[int, int] = {}
    written: set[int] = set()

    def size(node: yaml.Node) -> int:
        written.add(id(node))
        if id(node) in memo:
            return memo[id(node)]
        memo[id(node)] = 10 * limit  # a cycle counts as too large
        total = 1
        if isinstance(node, yaml.SequenceNode):
            children = node.value
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        else:
            children = []
        for child in children:
            total += size(child)
            if total - len(written) > limit:
                break
        memo[id(node)] = total
        return total

    expanded = size(root)
    return expanded - len(written)


def parse_yaml_text(text: str, source: str) -> Any:
    """Parse one YAML document strictly (safe types only, no duplicate keys, bounded
    alias expansion); problems become one-line :class:`ScenarioError` s."""
    try:
        loader = _StrictLoader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            if _alias_nodes(node) > MAX_ALIAS_NODES:
                raise ScenarioError(
                    source,
                    [("", f"YAML aliases expand to over {MAX_ALIAS_NODES:,} nodes (alias bomb?)")],
                )
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise ScenarioError(source, [("", f"YAML syntax error: {where}{err.problem}")]) from None
    except yaml.YAMLError as err:
        raise ScenarioError(
            source, [("", f"YAML syntax error: {excerpt(str(err), 200)}")]
        ) from None
    except RecursionError:
        raise ScenarioError(source, [("", "YAML nested too deeply")]) from None


def read_yaml(path: str | Path, what: str = "scenario file") -> Any:
    """Read a YAML file (UTF-8 text of at most :data:`MAX_FILE_BYTES`, a regular file)
    strictly; every problem becomes one line, syntax errors with line and column."""
    try:
        text = read_text_bounded(path, MAX_FILE_BYTES, what)
    except ValueError as err:
        raise ScenarioError(
            str(path), [("", str(err).replace("not text", "not YAML text"))]
        ) from None
    if not text.strip():
        raise ScenarioError(str(path), [("", "file is empty")])
    return parse_yaml_text(text, str(path))


def cached_per_file(loader: Callable[[str], Any], maxsize: int = 16) -> Callable[[str], Any]:
    """``loader(path)`` cached per file and modification time (a file edited between two
    runs in one process is read again); a file that cannot be stat'ed is a
    ``ValueError``."""
    cached = functools.lru_cache(maxsize=maxsize)(lambda path, _stamp: loader(path))

    @functools.wraps(loader)
    def read(path: str) -> Any:
        try:
            stamp = os.stat(path).st_mtime_ns
        except FileNotFoundError:
            raise ValueError(f"{path}: file not found") from None
        except OSError as err:
            raise ValueError(f"{path}: cannot read ({err.strerror or err})") from None
        return cached(path, stamp)

    return read
