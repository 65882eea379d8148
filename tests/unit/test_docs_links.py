"""Relative links in README.md and docs/ point to files that exist, and anchors to headings.

An anchor must match a heading of the target page under both slug rules in use: GitHub's (the
pages are read on GitHub) and Python-Markdown's ``toc`` extension (the MkDocs site), so every
link works in both places. Links from docs/ must stay inside docs/, which is all the site has.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

from tests.docs_support import DOCS, README, ROOT, pages

_FENCE = re.compile(r"^```.*?^```[ \t]*$", re.M | re.S)
_CODE = re.compile(r"`[^`\n]*`")
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.M)


def _prose(text: str) -> str:
    return _CODE.sub("", _COMMENT.sub("", _FENCE.sub("", text)))


def _heading_text(raw: str) -> str:
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", raw)  # a link: its text
    return text.replace("`", "").replace("*", "")


def github_slug(text: str) -> str:
    return re.sub(r"[^\w\- ]", "", _heading_text(text).strip().lower()).replace(" ", "-")


def mkdocs_slug(text: str) -> str:
    value = unicodedata.normalize("NFKD", _heading_text(text)).encode("ascii", "ignore").decode()
    value = re.sub(r"[^\w\s-]", "", value).strip().lower()
    return re.sub(r"[-\s]+", "-", value)


def anchors(page: Path) -> tuple[set[str], set[str]]:
    headings = [m.group(2) for m in _HEADING.finditer(_FENCE.sub("", page.read_text("utf-8")))]
    return {github_slug(h) for h in headings}, {mkdocs_slug(h) for h in headings}


def links(page: Path) -> list[str]:
    return [
        target
        for target in _LINK.findall(_prose(page.read_text(encoding="utf-8")))
        if not re.match(r"^[a-z][a-z0-9+.-]*:", target)  # http:, https:, mailto:
    ]


def test_the_pages_link_to_each_other() -> None:
    assert len(links(README)) >= 5
    assert sum(len(links(p)) for p in pages()) >= 50


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in links(page):
        path_part, _, anchor = target.partition("#")
        path = (page.parent / path_part).resolve() if path_part else page
        if not path.is_file():
            broken.append(f"{target}: no such file")
            continue
        if page.is_relative_to(DOCS) and not path.is_relative_to(DOCS):
            broken.append(f"{target}: outside docs/, the site cannot link to it")
        if anchor and path.suffix == ".md":
            github, mkdocs = anchors(path)
            if anchor not in github or anchor not in mkdocs:
                broken.append(f"{target}: no heading with this anchor")
    assert broken == []


def test_slug_rules() -> None:
    heading = "Worker (`WORKER.properties`)"
    assert github_slug(heading) == mkdocs_slug(heading) == "worker-workerproperties"
    assert github_slug("With BatchingSinkTask") == "with-batchingsinktask"
