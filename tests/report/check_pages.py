#!/usr/bin/env python3
"""Opens a lab results folder's pages in headless Chromium (Debian's package, driven by
playwright) and checks what a reader would see.

For DIR/index.html and one scenario page (the first report.html the index links to, or --page):
  * no console error, no uncaught exception, no failed request while loading;
  * every chart (``figure.chart svg``) has a non-zero size and is not hidden;
  * the scenario page has at least one chart and one HTML table with rows, and no ``<pre>``.
Saves full-page screenshots into DIR: screenshot-index.png and screenshot-SCENARIO.png.
Exits 1 with one line per problem, 0 with a summary when all is well.

  .venv/bin/python tests/report/check_pages.py docs/results/2026-11-25/hip-bex-full-b4962dc
"""

import argparse
import os
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# Size, visibility and position of every chart, measured by the browser.
CHARTS_JS = """() => Array.from(document.querySelectorAll('figure.chart svg')).map(s => {
  const r = s.getBoundingClientRect();
  const st = getComputedStyle(s);
  return {title: s.closest('figure').dataset.chart || '', w: r.width, h: r.height,
          visible: st.visibility !== 'hidden' && st.display !== 'none' && r.width > 0 && r.height > 0,
          bars: s.querySelectorAll('rect').length};
})"""
TABLES_JS = """() => Array.from(document.querySelectorAll('table')).map(t => t.tBodies.length ? t.tBodies[0].rows.length : 0)"""


def check(page, url, out_png, want_charts, problems):
    errors = []
    page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
    page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url} ({r.failure})"))
    page.goto(url, wait_until="load")
    name = Path(url).name
    charts = page.evaluate(CHARTS_JS)
    tables = page.evaluate(TABLES_JS)
    problems += [f"{name}: {e}" for e in errors]
    if want_charts and not charts:
        problems.append(f"{name}: no chart")
    for c in charts:
        if not c["visible"]:
            problems.append(f"{name}: chart '{c['title']}' not visible ({c['w']:.0f}×{c['h']:.0f} px)")
        elif c["bars"] < 2:
            problems.append(f"{name}: chart '{c['title']}' has no bars")
    if not any(n > 0 for n in tables):
        problems.append(f"{name}: no HTML table with rows")
    if page.query_selector("pre") is not None:
        problems.append(f"{name}: a <pre> block (tables must be HTML tables)")
    page.screenshot(path=str(out_png), full_page=True)
    return len(charts), sum(tables)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", type=Path, help="results folder holding index.html (hipsec lab report DIR)")
    ap.add_argument("--page", type=Path, help="scenario page to open (default: the index's first link)")
    ap.add_argument("--chromium", default=os.environ.get("CHROMIUM", "/usr/bin/chromium"))
    a = ap.parse_args()
    root = a.dir.resolve()
    index = root / "index.html"
    if not index.is_file():
        sys.exit(f"{index}: missing (run `hipsec lab report {a.dir}` first)")
    problems = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=a.chromium, args=FLAGS)
        ctx = browser.new_context(viewport={"width": 1280, "height": 900})
        page = ctx.new_page()
        n_idx = check(page, index.as_uri(), root / "screenshot-index.png", False, problems)
        target = a.page.resolve() if a.page else None
        if target is None:
            hrefs = page.eval_on_selector_all("#scenarios a[href]", "as => as.map(a => a.href)")
            if not hrefs:
                problems.append("index.html: links to no scenario page")
            else:
                target = Path(hrefs[0].removeprefix("file://"))
        n_page = (0, 0)
        if target is not None:
            scenario = target.parent.name
            page = ctx.new_page()
            n_page = check(page, target.as_uri(), root / f"screenshot-{scenario}.png", True, problems)
        browser.close()
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    print(f"pages OK: index ({n_idx[0]} charts, {n_idx[1]} table rows), "
          f"{target.relative_to(root)} ({n_page[0]} charts, {n_page[1]} table rows); "
          f"screenshots in {root}")


if __name__ == "__main__":
    main()
