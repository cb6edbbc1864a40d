"""The scenario reference as Markdown, generated from the schema (``netfl schema``): one
table per section, every key with its type, default, bounds and description. The docs
site renders it (``docs/hooks.py``), so the page cannot drift from the code."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["schema_markdown"]

_BOUNDS = (
    ("minimum", "≥"),
    ("exclusiveMinimum", ">"),
    ("maximum", "≤"),
    ("exclusiveMaximum", "<"),
)


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in node:
        return {
            **defs[node["$ref"].rsplit("/", 1)[-1]],
            **{k: v for k, v in node.items() if k != "$ref"},
        }
    return node


def _type(node: dict[str, Any], defs: dict[str, Any]) -> str:
    node = _resolve(node, defs)
    if "enum" in node:
        return " \\| ".join(f"`{v}`" for v in node["enum"])
    if "const" in node:
        return f"`{node['const']}`"
    for key in ("anyOf", "oneOf"):
        if key in node:
            kinds = [_type(n, defs) for n in node[key]]
            return " \\| ".join(dict.fromkeys(k for k in kinds if k != "null")) + (
                " or null" if "null" in kinds else ""
            )
    if node.get("type") == "array":
        return f"list of {_type(node.get('items', {}), defs)}"
    if "properties" in node:
        return "section"
    return str(node.get("type", "any"))


def _cell(text: str) -> str:
    """Text for a table cell: pipes and brackets escaped (``[m]`` is a unit, not a link)."""
    for ch in "|[]":
        text = text.replace(ch, "\\" + ch)
    return text.replace("\n", " ")


def _rows(node: dict[str, Any], defs: dict[str, Any], prefix: str, depth: int) -> list[str]:
    node = _resolve(node, defs)
    rows = []
    for key, sub in node.get("properties", {}).items():
        sub_r = _resolve(sub, defs)
        path = f"{prefix}.{key}" if prefix else key
        limits = dict(sub_r)
        for member in sub_r.get("anyOf", []):  # (a nullable number keeps its bounds inside)
            limits.update({k: v for k, v in member.items() if k in dict(_BOUNDS)})
        bounds = ", ".join(f"{sign} {limits[k]:g}" for k, sign in _BOUNDS if k in limits)
        default = sub.get("default", sub_r.get("default", "–"))
        default_text = "–" if default == "–" else f"`{json.dumps(default)}`"
        if "properties" in sub_r and depth < 3:
            rows.append(f"| `{path}` | section | | | {_cell(sub_r.get('description', ''))} |")
            rows += _rows(sub_r, defs, path, depth + 1)
            continue
        if len(default_text) > 60:
            default_text = "(see the section)"
        desc = _cell(sub.get("description", sub_r.get("description", "")))
        rows.append(f"| `{path}` | {_type(sub, defs)} | {default_text} | {bounds} | {desc} |")
    return rows


def schema_markdown() -> str:
    """Every section of a scenario file as a Markdown table (key, type, default, bounds,
    description), from the pydantic schema."""
    from netfl.scenario.files import scenario_schema

    schema = scenario_schema()
    defs = schema.get("$defs", {})
    out = []
    for section, node in schema["properties"].items():
        resolved = _resolve(node, defs)
        out.append(f"## `{section}`\n")
        if resolved.get("description"):
            out.append(_cell(resolved["description"]) + "\n")
        if "properties" not in resolved:
            default = node.get("default")
            out.append(f"{_type(node, defs)}; default `{json.dumps(default)}`.\n")
            continue
        out.append("| key | type | default | bounds | meaning |")
        out.append("|---|---|---|---|---|")
        out += _rows(resolved, defs, section, 1)
        out.append("")
    return "\n".join(out)
