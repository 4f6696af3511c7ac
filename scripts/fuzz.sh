#!/usr/bin/env bash
# Runs every cargo-fuzz target for N seconds (default 30); any crash fails. Installs cargo-fuzz if
# missing; uses the nightly toolchain when present, else stable with RUSTC_BOOTSTRAP (sanitizer flags).
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-30}"
if ! command -v cargo-fuzz >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked --quiet
fi
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  fuzz=(cargo +nightly fuzz)
else
  export RUSTC_BOOTSTRAP=1
  fuzz=(cargo fuzz)
fi
targets=$("${fuzz[@]}" list --fuzz-dir fuzz)
for t in $targets; do
  mkdir -p "fuzz/corpus/$t"
  seeds="fuzz/seeds/$t"
  [ -d "$seeds" ] || seeds=""
  echo "fuzz: $t for ${secs}s"
  log="$(mktemp)"
  if ! "${fuzz[@]}" run --fuzz-dir fuzz "$t" "fuzz/corpus/$t" $seeds -- \
    -max_total_time="$secs" -max_len=4096 -print_final_stats=1 >"$log" 2>&1; then
    # The finding itself (panic message, sanitizer report, the input's file) is near the top
    # of what a failing run prints, above its stack trace.
    grep -v '^ *at \|^ *[0-9]*: ' "$log" | tail -n 60
    echo "fuzz: $t failed; the input is under fuzz/artifacts/$t/"
    rm -f "$log"
    exit 1
  fi
  tail -n 4 "$log"
  rm -f "$log"
done
echo "fuzz: $(echo $targets | wc -w) targets ran ${secs}s each without a crash"
