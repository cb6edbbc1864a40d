"""MkDocs hooks: the scenario reference page is generated from the schema at build time
(``netfl.scenario.reference.schema_markdown``), so it always says what the code accepts."""

from __future__ import annotations

PLACEHOLDER = "<!-- generated: scenario schema -->"
#: the note that tells a reader of the Markdown file where the reference is (the site
#: shows the reference itself: the note goes)
NOTE = "*Reading this file as Markdown?"


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 (MkDocs' signature)
    if PLACEHOLDER not in markdown:
        return markdown
    from netfl.scenario.reference import schema_markdown

    at, note = markdown.index(PLACEHOLDER), markdown.find(NOTE)
    start = note if 0 <= note < at else at
    return markdown[:start] + schema_markdown() + markdown[at + len(PLACEHOLDER) :]
