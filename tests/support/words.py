"""What a page or a help text must not leave a reader guessing at: jargon before its plain words (the first
use of "censored", S (survival) and %BW on a page or in a command's help follows, within a few words, what it
means; the sweep page's "censored (survived 5 s)", select's "3/16 <= S <= 0.5" and calibrate's "%BW" went
unexplained), and a headline card with no value (a blank "regret on ALE screening" tile)."""

from __future__ import annotations

import re

# term: (its use, the plain words that come just before its first use)
TERMS = {
    "censored": (re.compile(r"\bcensored\b", re.I), "survived to the end"),
    "%BW": (re.compile(r"%BW"), "% of body weight"),
    "S": (re.compile(r"(?<![\w'.-])S(?![\w'-])"), "survival"),  # survival's S; not "S.", "S's" or "U-S"
}
WITHIN = 40  # characters before the first use that must hold the plain words


def unexplained(text: str, terms: tuple[str, ...] = tuple(TERMS)) -> list[str]:
    """Each of `terms` whose first use in `text` has no plain words just before it, with its context."""
    bad = []
    for name in terms:
        use, plain = TERMS[name]
        m = use.search(text)
        if m and plain.lower() not in text[max(0, m.start() - WITHIN) : m.start()].lower():
            bad.append(f"{name}: ...{text[max(0, m.start() - 80) : m.end() + 30]}...")
    return bad


def blank_tiles(tiles: list[tuple[str, str]]) -> list[str]:
    """The headline cards (`browser.render_check`'s tiles) whose value reads as nothing: empty or a dash."""
    return [name for name, value in tiles if value.strip() in ("", "-", "—")]
