"""MkDocs hooks: the scenario reference page is generated from the schema at build time
(``netfl.scenario.reference.schema_markdown``), so it always says what the code accepts."""

from __future__ import annotations

PLACEHOLDER = "<!-- generated: scenario schema -->"


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 (MkDocs' signature)
    if PLACEHOLDER not in markdown:
        return markdown
    from netfl.scenario.reference import schema_markdown

    return markdown.replace(PLACEHOLDER, schema_markdown())
