"""Render a readable HTML page from a report's JSON.

Layout: a title, headline numbers, figures and videos, tables, then (as the original
reports did) one section per top-level JSON key with its pretty-printed JSON, and a link to the
JSON file itself. A small script stamps ``data-render-check`` on <body> once every image has
loaded, so a headless browser can confirm the page really renders (see `report.browser`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import jinja2

from policylab.fileio import atomic_write_text
from policylab.hashing import pretty_json

_TEMPLATE = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined).from_string(
    """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>{{ title }}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:2rem auto;max-width:1100px;
     padding:0 1rem;color:#1f2328;line-height:1.45}
h1{font-size:1.7rem;margin-bottom:.2rem} h2{font-size:1.25rem;margin-top:2rem;border-bottom:1px solid #d0d7de}
.sub{color:#59636e;margin-top:0}
.headline{display:flex;flex-wrap:wrap;gap:.8rem;margin:1rem 0}
.card{border:1px solid #d0d7de;border-radius:8px;padding:.6rem .9rem;min-width:150px}
.card .k{font-size:.8rem;color:#59636e}.card .v{font-size:1.25rem;font-weight:600}
table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0}
th,td{border:1px solid #d0d7de;padding:.25rem .5rem;text-align:right}th{background:#f6f8fa}
td:first-child,th:first-child{text-align:left}
figure{margin:1rem 0}figure img,video{max-width:100%;border:1px solid #d0d7de}
figcaption{font-size:.85rem;color:#59636e}
pre{background:#f6f8fa;padding:.7rem;overflow:auto;max-height:420px;font-size:.78rem}
.note{background:#fff8c5;border:1px solid #d4a72c;padding:.5rem .8rem;border-radius:6px}
</style></head>
<body>
<h1>{{ title }}</h1>
{% if subtitle %}<p class="sub">{{ subtitle }}</p>{% endif %}
<p><a href="{{ json_name }}">{{ json_name }}</a> holds every number on this page.</p>
{% if headline %}<div class="headline">{% for k, v in headline %}<div class="card"><div class="k">{{ k }}</div>
<div class="v">{{ v }}</div></div>{% endfor %}</div>{% endif %}
{% for note in notes %}<p class="note">{{ note }}</p>{% endfor %}
{% for f in figures %}<figure><img src="{{ f[1] }}" alt="{{ f[0] }}"><figcaption>{{ f[0] }}</figcaption></figure>{% endfor %}
{% for v in videos %}<figure><video src="{{ v[1] }}" controls muted loop playsinline></video>
<figcaption>{{ v[0] }} (<a href="{{ v[1] }}">{{ v[1] }}</a>)</figcaption></figure>{% endfor %}
{% if links %}<h2>{{ links_title }}</h2><ul>{% for text, href in links %}<li><a href="{{ href }}">{{ text }}</a></li>
{% endfor %}</ul>{% endif %}
{% for t in tables %}<h2>{{ t.title }}</h2>{% if t.rows %}<table><tr>{% for c in t.columns %}<th>{{ c }}</th>{% endfor %}</tr>
{% for r in t.rows %}<tr>{% for c in t.columns %}<td>{{ fmt(r.get(c)) }}</td>{% endfor %}</tr>{% endfor %}</table>
{% else %}<p>(none)</p>{% endif %}{% endfor %}
{% for key, text in sections %}<h2 id="{{ key }}">{{ key }}</h2><pre>{{ text }}</pre>{% endfor %}
<script>
(function(){
  function check(){
    var imgs = Array.prototype.slice.call(document.images);
    var ok = imgs.filter(function(i){return i.complete && i.naturalWidth > 0;}).length;
    document.body.setAttribute('data-render-check', 'images=' + imgs.length + ';loaded=' + ok);
  }
  if (document.readyState === 'complete') check(); else window.addEventListener('load', check);
})();
</script>
</body></html>
"""
)


@dataclass
class Table:
    title: str
    columns: Sequence[str]
    rows: Sequence[Mapping[str, Any]]


@dataclass
class Page:
    """Everything a report page shows besides the JSON sections."""

    title: str
    subtitle: str = ""
    headline: Sequence[tuple[str, Any]] = ()
    notes: Sequence[str] = ()
    tables: Sequence[Table] = ()
    figures: Sequence[tuple[str, str]] = ()  # (caption, path relative to the page)
    videos: Sequence[tuple[str, str]] = ()
    links: Sequence[tuple[str, str]] = ()  # (text, href relative to the page), listed under links_title
    links_title: str = "Files"


def fmt(value: Any) -> str:
    """Compact cell text: floats to 4 significant digits, lists inline."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(fmt(v) for v in value) + "]"
    return str(value)


def render(path: str | Path, page: Page, data: Mapping[str, Any], json_name: str = "report.json") -> None:
    """Write `path` (HTML) for `data`, whose JSON is expected beside it as `json_name`."""
    sections = [(k, pretty_json(v)) for k, v in data.items()]
    text = _TEMPLATE.render(
        title=page.title,
        subtitle=page.subtitle,
        headline=[(k, fmt(v)) for k, v in page.headline],
        notes=list(page.notes),
        tables=list(page.tables),
        figures=list(page.figures),
        videos=list(page.videos),
        links=list(page.links),
        links_title=page.links_title,
        sections=sections,
        json_name=json_name,
        fmt=fmt,
    )
    atomic_write_text(path, text)
