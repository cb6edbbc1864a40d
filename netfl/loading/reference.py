"""The scenario reference as Markdown, generated from the schema (``netfl schema``): one
table per section, every key with its type, default, bounds and description, down to
the nested sections (``network.handover.ttt_s``) and the items of lists of sections
(``devices.groups[].count``); the ``algorithm`` section as ``algorithm.name`` and one
table of options per registered algorithm. ``netfl schema --markdown`` prints it and
``docs/generate.py`` writes it into ``docs/scenario-reference.md``."""

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


def _section(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any] | None:
    """The object schema with keys that ``node`` is, or may be (a nullable section);
    None for a leaf."""
    node = _resolve(node, defs)
    if "properties" in node:
        return node
    members = [_resolve(n, defs) for n in node.get("anyOf", [])]
    sections = [m for m in members if "properties" in m]
    return sections[0] if len(sections) == 1 else None


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


def _default(sub: dict[str, Any], sub_r: dict[str, Any]) -> str:
    default = sub.get("default", sub_r.get("default", "–"))
    text = "–" if default == "–" else f"`{json.dumps(default, ensure_ascii=False)}`"
    return "(see the section)" if len(text) > 60 else text


def _bounds(sub_r: dict[str, Any]) -> str:
    limits = dict(sub_r)
    for member in sub_r.get("anyOf", []):  # (a nullable number keeps its bounds inside)
        limits.update({k: v for k, v in member.items() if k in dict(_BOUNDS)})
    return ", ".join(f"{sign} {limits[k]:g}" for k, sign in _BOUNDS if k in limits)


def _rows(node: dict[str, Any], defs: dict[str, Any], prefix: str) -> list[str]:
    """One row per key of the section ``node`` at ``prefix``, and the rows of its nested
    sections (and of the items of its lists of sections: ``prefix.key[].item``)."""
    rows = []
    for key, sub in node.get("properties", {}).items():
        sub_r = _resolve(sub, defs)
        path = f"{prefix}.{key}" if prefix else key
        desc = _cell(sub.get("description", sub_r.get("description", "")))
        section = _section(sub, defs)
        items = _section(sub_r.get("items", {}), defs) if sub_r.get("type") == "array" else None
        if section is not None:
            nullable = "anyOf" in sub_r  # (a section that may be absent: null by default)
            kind, default = ("section or null", "`null`") if nullable else ("section", "")
            desc = desc or _cell(section.get("description", ""))
            rows.append(f"| `{path}` | {kind} | {default} | | {desc} |")
            rows += _rows(section, defs, path)
        elif items is not None:
            desc = desc or _cell(items.get("description", ""))
            rows.append(f"| `{path}` | list of sections | {_default(sub, sub_r)} | | {desc} |")
            rows += _rows(items, defs, f"{path}[]")
        else:
            kind, bounds = _type(sub, defs), _bounds(sub_r)
            rows.append(f"| `{path}` | {kind} | {_default(sub, sub_r)} | {bounds} | {desc} |")
    return rows


_HEADER = ["| key | type | default | bounds | meaning |", "|---|---|---|---|---|"]


def _algorithm_markdown(node: dict[str, Any], defs: dict[str, Any]) -> list[str]:
    """``algorithm.name`` and, per registered algorithm, the table of its options."""
    from netfl.algorithms import ALGORITHMS

    variants = _resolve(node, defs).get("oneOf", [])
    names = [v["properties"]["name"]["const"] for v in variants]
    default = node.get("default", {}).get("name", "fedavg")
    choices = " \\| ".join(f"`{n}`" for n in names)
    out = [
        "The algorithm a run uses (`name`) and its own options, beside `name` in the same "
        "section (`algorithm.fraction`, not `algorithm.fedavg.fraction`); an option of "
        "another algorithm is an error.\n",
        *_HEADER,
        f"| `algorithm.name` | {choices} | "
        f"`{json.dumps(default)}` | | the algorithm (a plugin adds its own names) |",
        "",
    ]
    for variant, name in zip(variants, names, strict=True):
        cls = ALGORITHMS.get(name)
        doc = (cls.__doc__ or "").strip().split("\n\n")[0] if cls is not None else ""
        out.append(f"### `algorithm: {name}`\n")
        if doc:
            out.append(_cell(" ".join(doc.split())) + "\n")
        options = {k: v for k, v in variant["properties"].items() if k != "name"}
        if not options:
            out.append("No options beside `name`.\n")
            continue
        out += _HEADER
        out += _rows({"properties": options}, defs, "algorithm")
        out.append("")
    return out


def schema_markdown() -> str:
    """Every section of a scenario file as a Markdown table (key, type, default, bounds,
    description), from the schema of :func:`netfl.loading.scenarios.scenario_schema`."""
    from netfl.loading.scenarios import scenario_schema

    schema = scenario_schema()
    defs = schema.get("$defs", {})
    out = []
    for name, node in schema["properties"].items():
        resolved = _resolve(node, defs)
        section = _section(node, defs)
        out.append(f"## `{name}`\n")
        description = node.get("description") or resolved.get("description")
        if description:
            out.append(_cell(description) + "\n")
        if name == "algorithm":
            out += _algorithm_markdown(node, defs)
            continue
        if section is None:
            default = json.dumps(node.get("default"), ensure_ascii=False)
            out.append(f"{_type(node, defs)}; default `{default}`.\n")
            continue
        if "anyOf" in resolved:
            out.append("Absent by default (`null`); when given, its keys are:\n")
        out += _HEADER
        out += _rows(section, defs, name)
        out.append("")
    return "\n".join(out)
