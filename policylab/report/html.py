"""Render a readable HTML page from a report's JSON: one page model, two layouts (`render`, `render_sections`).

Both stamp ``data-render-check`` on <body> once every image has loaded (see `report.browser`)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2

from policylab.fileio import atomic_write_text
from policylab.hashing import pretty_json

_ONE_BLOCK = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined).from_string(
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
tr.fail td{background:#fff1ef}
.tnote{font-size:.8rem;color:#59636e;margin-top:0}
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
{% for r in t.cells() %}<tr{% if t.failed and t.failed[loop.index0] %} class="fail"{% endif %}>{% for v in r %}<td>{{ fmt(v) }}</td>{% endfor %}</tr>{% endfor %}</table>
{% else %}<p>(none)</p>{% endif %}{% if t.note %}<p class="tnote">{{ t.note }}</p>{% endif %}{% endfor %}
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


_SECTIONS = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined).from_string(
    """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>{{ page.title }}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:2rem auto;max-width:1100px;
     padding:0 1rem;color:#1f2328;line-height:1.45}
h1{font-size:1.7rem;margin-bottom:.2rem} h2{font-size:1.25rem;margin-top:2.2rem;border-bottom:1px solid #d0d7de}
h3{font-size:1rem;margin:1.2rem 0 .3rem}
.sub{color:#59636e;margin-top:0}
.headline{display:flex;flex-wrap:wrap;gap:.8rem;margin:1rem 0}
.card{border:1px solid #d0d7de;border-radius:8px;padding:.6rem .9rem;min-width:150px}
.card .k{font-size:.8rem;color:#59636e}.card .v{font-size:1.15rem;font-weight:600}
table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0}
th,td{border:1px solid #d0d7de;padding:.25rem .5rem;text-align:right;vertical-align:top}th{background:#f6f8fa}
td:first-child,th:first-child{text-align:left;white-space:nowrap} td.text{text-align:left;max-width:24rem}
tr.fail td{background:#fff1ef}
.tnote{font-size:.8rem;color:#59636e;margin-top:0}
figure{margin:1rem 0}figure img{max-width:100%;border:1px solid #d0d7de}
figcaption{font-size:.85rem;color:#59636e}
pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,monospace}
pre{background:#f6f8fa;padding:.7rem;overflow:auto;max-height:420px;font-size:.78rem}
p.mono{background:#f6f8fa;padding:.4rem .6rem;font-size:.85rem;overflow:auto;white-space:pre}
.note{background:#fff8c5;border:1px solid #d4a72c;padding:.5rem .8rem;border-radius:6px}
nav a{margin-right:.8rem;font-size:.9rem}
details{margin:.4rem 0} summary{cursor:pointer}
</style></head>
<body>
<h1>{{ page.title }}</h1>
<p class="sub">{{ page.subtitle }}</p>
<p>{% for name in json_names %}<a href="{{ name }}">{{ name }}</a>{% if not loop.last %}, {% endif %}{% endfor %}
hold every number on this page.</p>
<div class="headline">{% for k, v in headline %}<div class="card"><div class="k">{{ k }}</div>
<div class="v">{{ v }}</div></div>{% endfor %}</div>
{% for note in page.notes %}<p class="note">{{ note }}</p>{% endfor %}
<nav>{% for s in page.sections %}<a href="#{{ s.id }}">{{ s.title }}</a>{% endfor %}<a href="#json">JSON</a></nav>
{% for s in page.sections %}<section id="{{ s.id }}"><h2>{{ s.title }}</h2>
{% for b in s.blocks %}{% if b.__class__.__name__ == "Table" %}<h3>{{ b.title }}</h3>
<table><tr>{% for c in b.columns %}<th>{{ c }}</th>{% endfor %}</tr>
{% for r in b.cells() %}<tr{% if b.failed and b.failed[loop.index0] %} class="fail"{% endif %}>{% for v in r %}<td{% if is_text(v) %} class="text"{% endif %}>{{ fmt(v) }}</td>{% endfor %}</tr>
{% endfor %}</table>{% if b.note %}<p class="tnote">{{ b.note }}</p>{% endif %}
{% elif b.__class__.__name__ == "Figure" %}<figure><img src="{{ b.src }}" alt="{{ b.caption }}"><figcaption>{{ b.caption }}</figcaption></figure>
{% else %}<p{% if b.mono %} class="mono"{% endif %}>{{ b.text }}</p>
{% endif %}{% endfor %}</section>
{% endfor %}
<section id="json"><h2>JSON</h2>
{% for name, parts in documents %}<h3>{{ name }}</h3>{% for key, text in parts %}<details><summary>{{ key }}</summary><pre>{{ text }}</pre></details>{% endfor %}{% endfor %}
</section>
<script>
(function(){
  function loaded(imgs){return imgs.filter(function(i){return i.complete && i.naturalWidth > 0;}).length;}
  function check(){
    var imgs = Array.prototype.slice.call(document.images);
    document.body.setAttribute('data-render-check', 'images=' + imgs.length + ';loaded=' + loaded(imgs));
    Array.prototype.forEach.call(document.querySelectorAll('section'), function(s){
      var own = Array.prototype.slice.call(s.querySelectorAll('img'));
      s.setAttribute('data-images', loaded(own) + '/' + own.length + ';tables=' + s.querySelectorAll('table').length);
    });
  }
  if (document.readyState === 'complete') check(); else window.addEventListener('load', check);
})();
</script>
</body></html>
"""
)


@dataclass
class Table:
    """A titled table. A row is a mapping from column to value, or the values in column order;
    numbers are formatted by `fmt`, text is shown as it is."""

    title: str
    columns: Sequence[str]
    rows: Sequence[Mapping[str, Any] | Sequence[Any]]
    note: str = ""  # a line under the table
    failed: Sequence[bool] = ()  # per row: highlight it (a claim that does not hold)

    def cells(self) -> list[list[Any]]:
        """Every row as its values in column order."""
        return [[r.get(c) for c in self.columns] if isinstance(r, Mapping) else list(r) for r in self.rows]


@dataclass
class Figure:
    """An image in a `Section`; `src` is relative to the page."""

    src: str
    caption: str


@dataclass
class Text:
    """A paragraph in a `Section`; `mono` keeps its spacing (a floor drawn in characters)."""

    text: str
    mono: bool = False


@dataclass
class Section:
    """A titled part of a page read in order (`render_sections`), linked from its navigation bar."""

    id: str
    title: str
    blocks: list[Table | Figure | Text] = field(default_factory=list)


@dataclass
class Page:
    """Everything a report page shows besides its JSON: `render` draws the tables, figures, videos
    and links; `render_sections` draws the sections."""

    title: str
    subtitle: str = ""
    headline: Sequence[tuple[str, Any]] = ()
    notes: Sequence[str] = ()
    tables: Sequence[Table] = ()
    figures: Sequence[tuple[str, str]] = ()  # (caption, path relative to the page)
    videos: Sequence[tuple[str, str]] = ()
    links: Sequence[tuple[str, str]] = ()  # (text, href relative to the page), listed under links_title
    links_title: str = "Files"
    sections: Sequence[Section] = ()


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


def is_text(value: Any) -> bool:
    """Words are left-aligned, numbers (and intervals) right-aligned."""
    return isinstance(value, str) and bool(re.search("[A-Za-z]", value)) and not value.startswith("[")


def render(path: str | Path, page: Page, data: Mapping[str, Any], json_name: str = "report.json") -> None:
    """Write `path` (HTML, the one-block layout) for `data`, whose JSON is expected beside it as `json_name`."""
    if page.sections:
        raise ValueError("a page with sections is drawn by render_sections")
    sections = [(k, pretty_json(v)) for k, v in data.items()]
    text = _ONE_BLOCK.render(
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


def render_sections(path: str | Path, page: Page, documents: Mapping[str, Mapping[str, Any]]) -> None:
    """Write `path` (HTML, the page of sections); `documents` maps each JSON file's name (relative to
    the page) to its content, shown folded, one part per top-level key, after the sections."""
    if page.tables or page.figures or page.videos or page.links:
        raise ValueError("a page of sections holds its tables and figures in its sections")
    folded = [(name, [(k, pretty_json(v)) for k, v in doc.items()]) for name, doc in documents.items()]
    atomic_write_text(
        path,
        _SECTIONS.render(
            page=page,
            headline=[(k, fmt(v)) for k, v in page.headline],
            json_names=list(documents),
            documents=folded,
            fmt=fmt,
            is_text=is_text,
        ),
    )
