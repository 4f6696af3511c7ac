#!/usr/bin/env bash
# The lab report in a browser: re-renders a results folder from its report.json files
# (`hipsec lab report`), opens index.html and one scenario page in headless Chromium (Debian's
# `chromium`, driven by playwright from .venv), fails on any console error, failed request or
# invisible chart, and leaves full-page screenshots (screenshot-index.png, screenshot-SCENARIO.png)
# in the folder. Takes a few seconds.
#
#   scripts/report-check.sh [DIR] [SCENARIO_PAGE]
#     DIR            results folder (default: the committed docs/results/2026-11-25/hip-bex-full-b4962dc)
#     SCENARIO_PAGE  report.html to open (default: the index's first link)
# Env: HIPSEC_BIN (default target/debug/hipsec, built if missing), CHROMIUM (default /usr/bin/chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-docs/results/2026-11-25/hip-bex-full-b4962dc}"
page="${2:-}"
bin="${HIPSEC_BIN:-target/debug/hipsec}"
chromium="${CHROMIUM:-/usr/bin/chromium}"

if [ ! -x "$chromium" ]; then
  echo "report-check: $chromium missing (apt-get install chromium)" >&2
  exit 1
fi
[ -x "$bin" ] || cargo build -p hipsec --quiet
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -c 'import playwright' 2>/dev/null ||
  .venv/bin/pip install --quiet --disable-pip-version-check playwright

"$bin" lab report "$dir"
# Debian's chromium launcher script prints a harmless shell warning on stderr; keep the rest.
CHROMIUM="$chromium" .venv/bin/python tests/report/check_pages.py "$dir" ${page:+--page "$page"} \
  2> >(grep -v 'unexpected operator' >&2)
