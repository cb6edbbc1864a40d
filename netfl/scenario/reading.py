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

from pathlib import Path
from typing import Any

import yaml

from netfl.core.bounded_reading import cached_per_file, read_bytes_bounded, read_text_bounded
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
