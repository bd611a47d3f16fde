"""The Lava Leap page: sections of prose, tables and charts, in the house style of every report.

`policylab.report.html` renders the shared one-block layout (headline, figures, tables, JSON); this
study's page needs sections in reading order (results, comparisons, claims, the walkthrough step by
step), so it has its own small template with the same look, the same `data-render-check` stamp
(read by `policylab.report.browser.render_check`) and the JSON sections at the end, folded. Each
<section> is stamped too, with `data-images="loaded/total;tables=n"`, so a browser test can check
one section (the walkthrough) by itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import jinja2

from policylab.fileio import atomic_write_text
from policylab.hashing import pretty_json
from policylab.report.html import fmt


@dataclass
class Table:
    title: str
    columns: Sequence[str]
    rows: Sequence[Sequence[Any]]  # cells in column order; str as is, numbers through `fmt`
    note: str = ""
    failed: Sequence[bool] = ()  # per row: highlight (a claim that does not hold)


@dataclass
class Figure:
    src: str  # path relative to the page
    caption: str


@dataclass
class Text:
    text: str
    mono: bool = False


@dataclass
class Section:
    id: str
    title: str
    blocks: list = field(default_factory=list)  # Table | Figure | Text, in reading order


@dataclass
class Page:
    title: str
    subtitle: str
    headline: Sequence[tuple[str, str]]
    notes: Sequence[str]
    sections: Sequence[Section]


_TEMPLATE = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined).from_string(
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
<div class="headline">{% for k, v in page.headline %}<div class="card"><div class="k">{{ k }}</div>
<div class="v">{{ v }}</div></div>{% endfor %}</div>
{% for note in page.notes %}<p class="note">{{ note }}</p>{% endfor %}
<nav>{% for s in page.sections %}<a href="#{{ s.id }}">{{ s.title }}</a>{% endfor %}<a href="#json">JSON</a></nav>
{% for s in page.sections %}<section id="{{ s.id }}"><h2>{{ s.title }}</h2>
{% for b in s.blocks %}{% if b.__class__.__name__ == "Table" %}<h3>{{ b.title }}</h3>
<table><tr>{% for c in b.columns %}<th>{{ c }}</th>{% endfor %}</tr>
{% for r in b.rows %}<tr{% if b.failed and b.failed[loop.index0] %} class="fail"{% endif %}>{% for v in r %}<td{% if is_text(v) %} class="text"{% endif %}>{{ cell(v) }}</td>{% endfor %}</tr>
{% endfor %}</table>{% if b.note %}<p class="tnote">{{ b.note }}</p>{% endif %}
{% elif b.__class__.__name__ == "Figure" %}<figure><img src="{{ b.src }}" alt="{{ b.caption }}"><figcaption>{{ b.caption }}</figcaption></figure>
{% else %}<p{% if b.mono %} class="mono"{% endif %}>{{ b.text }}</p>
{% endif %}{% endfor %}</section>
{% endfor %}
<section id="json"><h2>JSON</h2>
{% for name, parts in sections %}<h3>{{ name }}</h3>{% for key, text in parts %}<details><summary>{{ key }}</summary><pre>{{ text }}</pre></details>{% endfor %}{% endfor %}
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


def cell(value: Any) -> str:
    return value if isinstance(value, str) else fmt(value)


def is_text(value: Any) -> bool:
    """Words are left-aligned, numbers (and intervals) right-aligned."""
    return isinstance(value, str) and bool(re.search("[A-Za-z]", value)) and not value.startswith("[")


def render_page(path: str | Path, page: Page, documents: Mapping[str, Mapping[str, Any]]) -> None:
    """Write the page; `documents` maps each JSON file's name (relative to the page) to its content,
    shown folded, one part per top-level key, after the sections."""
    sections = [(name, [(k, pretty_json(v)) for k, v in doc.items()]) for name, doc in documents.items()]
    atomic_write_text(path, _TEMPLATE.render(page=page, json_names=list(documents), sections=sections, cell=cell, is_text=is_text))
