"""Build ctxlab's API reference from its docstrings with pdoc, and check its links.

    python docs/build_api.py [OUT]     # default build/api; exits 1 naming each broken link

Every module of the library is documented, but the old paths of the course modules, which only
warn and hand over to ``ctxlab.course`` (their pages would be empty). Docstrings are read as
reStructuredText, so ``:func:`ctxlab.compact``` becomes a link. The check follows every link
between the pages (a page that is missing, or an ``#anchor`` no element has) without going on
the network: links to other sites are listed, not fetched.
"""

from __future__ import annotations

import sys
import warnings
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parents[1]
OLD_PATHS = {"checking", "environment", "transcripts", "layout", "layout_html", "widgets", "plots"}
"""Modules of ctxlab that moved to ctxlab.course and only hand over to it, with a warning."""


def modules() -> list[str]:
    """The modules to document: ``ctxlab``, each of its modules, and ``ctxlab.course``'s."""
    names = ["ctxlab"]
    for folder, package in ((ROOT / "ctxlab", "ctxlab"), (ROOT / "ctxlab" / "course", "ctxlab.course")):
        if package != "ctxlab":
            names.append(package)
        for path in sorted(folder.glob("*.py")):
            if path.stem.startswith("_") or (package == "ctxlab" and path.stem in OLD_PATHS):
                continue
            names.append(f"{package}.{path.stem}")
    return names


def build(out: Path) -> Path:
    """Write the reference to ``out``; return its index page."""
    import pdoc
    import pdoc.render

    pdoc.render.configure(docformat="restructuredtext", show_source=False,
                          footer_text="ctxlab: short-term memory for LLM agents")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pdoc notes what it cannot resolve; the link check judges
        pdoc.pdoc(*modules(), output_directory=out)
    return out / "index.html"


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        for key in ("id", "name"):
            if values.get(key):
                self.ids.add(values[key])
        for key in ("href", "src"):
            if values.get(key):
                self.links.append(values[key])


def broken_links(out: Path) -> tuple[list[str], set[str]]:
    """Every link between the pages under ``out`` that leads nowhere (``page: link``), and the
    other sites linked to."""
    pages: dict[Path, _Links] = {}
    for page in sorted(out.rglob("*.html")):
        parser = _Links()
        parser.feed(page.read_text(encoding="utf-8"))
        pages[page.resolve()] = parser
    broken, external = [], set()
    for page, parser in pages.items():
        for link in parser.links:
            parts = urlsplit(link)
            if parts.scheme in ("http", "https", "mailto") or link.startswith("//"):
                external.add(f"{parts.scheme}://{parts.netloc}" if parts.netloc else link)
                continue
            if parts.scheme == "data" or link.startswith("javascript:"):
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            where = f"{page.relative_to(out.resolve())}: {link}"
            missing_anchor = (target.exists() and parts.fragment and target.suffix == ".html"
                              and unquote(parts.fragment) not in pages[target].ids)
            if not target.exists() or missing_anchor:
                broken.append(where)
    return broken, external


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else ROOT / "build" / "api"
    index = build(out)
    broken, external = broken_links(out)
    for problem in broken:
        print(f"broken link: {problem}", file=sys.stderr)
    print(f"{index} ({len(list(out.rglob('*.html')))} pages; links to {len(external)} other sites not fetched)")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
