"""The sweep report's one static page, ``index.html``: the comparison table (mean ± std
over seeds), the figures, each run's straggler (``stragglers.csv``), and every run with
its status, error and links to its own figures (:func:`netfl.sweep.report.sweep_report` writes it last)."""

from __future__ import annotations

import html
import math
import os
from pathlib import Path

import pandas as pd

__all__ = ["report_page"]


def _fmt(value) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.4g}"
    return html.escape(str(value))


#: ``stragglers.csv``'s columns as the page shows them: (column, header, format)
_STRAGGLER_HEADERS = (
    ("group", "group", str),
    ("seed", "seed", str),
    ("rounds", "rounds", str),
    ("straggler", "straggler (most often)", str),
    ("straggler_rounds", "its rounds", str),
    ("straggler_step", "longest step", str),
    ("round_time_s", "mean round [s]", "{:.4g}".format),
    ("straggler_round_time_s", "mean of its rounds [s]", "{:.4g}".format),
    ("straggler_time_share", "its rounds' share of time", "{:.0%}".format),
    ("straggler_lead_s", "mean lead on the next device [s]", "{:.4g}".format),
    ("straggler_lead_share", "lead's share of time", "{:.0%}".format),
)


def _straggler_section(stragglers: pd.DataFrame | None, rel: str) -> str:
    """The page's per-run straggler table (empty without complete runs)."""
    if stragglers is None or stragglers.empty:
        return ""
    head = "<th>run</th>" + "".join(f"<th>{html.escape(h)}</th>" for _, h, _ in _STRAGGLER_HEADERS)
    body = ""
    for _, row in stragglers.iterrows():
        name = html.escape(str(row["run"]))
        cells = [f'<a href="{rel}/{name}/">{name}</a>']
        for col, _, fmt in _STRAGGLER_HEADERS:
            value = row[col]
            missing = value is None or (isinstance(value, float) and math.isnan(value))
            cells.append("–" if missing else html.escape(fmt(value)))
        body += "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>\n"
    return f"""<h2>Stragglers (per run)</h2>
<p>Each run's device most often the round's straggler (the last device on its critical
path), and how much of the run's time it set: the share of the total round time spent in
the rounds it held up, and how long after the next-slowest device it finished in them.
As CSV: <a href="stragglers.csv">stragglers.csv</a>.</p>
<table><thead><tr>{head}</tr></thead><tbody>
{body}</tbody></table>
"""


def report_page(
    title: str,
    summary: pd.DataFrame,
    index: pd.DataFrame,
    figures: list[Path],
    out: Path,
    sweep_dir: Path,
    stragglers: pd.DataFrame | None = None,
) -> Path:
    rel = Path(os.path.relpath(sweep_dir, out)).as_posix()
    stats = [  # (a timing-only sweep has no accuracy: no empty columns)
        c.removesuffix("_mean") for c in summary if c.endswith("_mean") and summary[c].notna().any()
    ]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in ["group", "runs", "complete", *stats])
    body = ""
    for _, row in summary.iterrows():
        cells = [_fmt(row["group"]), _fmt(row["runs"]), _fmt(row["complete"])]
        cells += [
            f"{_fmt(row[f'{c}_mean'])} ± {_fmt(row[f'{c}_std'])}"
            if pd.notna(row[f"{c}_mean"])
            else "–"  # never reached, or no complete run
            for c in stats
        ]
        body += "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>\n"
    runs = ""
    for _, row in index.iterrows():
        error = row.get("error")
        error = "" if not isinstance(error, str) else error
        name = html.escape(row["run"])
        link = f'<a href="{rel}/{name}/">{name}</a>'
        pngs = sorted((sweep_dir / row["run"] / "figures").glob("*.png"))
        figs = " ".join(
            f'<a href="{rel}/{name}/figures/{html.escape(f.name)}">{html.escape(f.stem)}</a>'
            for f in pngs
        )
        runs += (
            f"<tr><td>{link}</td><td>{html.escape(str(row['status']))}</td>"
            f'<td style="text-align:left">{figs}</td>'
            f"<td>{html.escape(error)}</td></tr>\n"
        )
    straggler_section = _straggler_section(stragglers, rel)
    imgs = "\n".join(
        f'<figure><img src="{p.name}" alt="{p.stem}"><figcaption>{p.stem}</figcaption></figure>'
        for p in figures
        if p.suffix == ".png"
    )
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; }}
table {{ border-collapse: collapse; font-size: 0.85em; }}
td, th {{ border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: right; }}
figure {{ display: inline-block; margin: 0.5em; }} img {{ max-width: 640px; }}
</style></head>
<body>
<h1>{html.escape(title)}</h1>
<h2>Comparison (mean ± std over seeds)</h2>
<table><thead><tr>{head}</tr></thead><tbody>
{body}</tbody></table>
<p>Table as CSV: <a href="summary.csv">summary.csv</a>; every run: <a href="{rel}/sweep.csv">sweep.csv</a>.</p>
<h2>Figures</h2>
{imgs}
{straggler_section}
<h2>Runs</h2>
<table><thead><tr><th>run</th><th>status</th><th>figures</th><th>error</th></tr></thead><tbody>
{runs}</tbody></table>
<script>
// for headless checks: how many figures loaded
window.addEventListener("load", () => {{
  const imgs = Array.from(document.images);
  const ok = imgs.filter((i) => i.complete && i.naturalWidth > 0).length;
  document.body.dataset.imagesLoaded = ok + "/" + imgs.length;
}});
</script>
</body></html>
"""
    path = out / "index.html"
    path.write_text(page, encoding="utf-8")
    return path
