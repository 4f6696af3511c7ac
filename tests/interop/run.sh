#!/usr/bin/env bash
# Cross-checks hipsec with scapy: its ESP/AH (tests/interop/scapy_esp.py), then its Mobile IPv6
# home agent against a scapy mobile node in network namespaces (tests/interop/scapy_mip6.py;
# SKIPPED without root). Creates or reuses a venv with scapy + cryptography, builds hipsec (or
# uses $HIPSEC_BIN), runs every case; exits non-zero if either script fails.
# Usage: tests/interop/run.sh [scapy_esp.py args, e.g. -k "esp aes128gcm"]
#   VENV=path      venv to create/reuse (default .venv at the repository root)
#   HIPSEC_BIN=p   use this hipsec binary instead of `cargo build --release -p hipsec`
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
venv="${VENV:-.venv}"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c 'import scapy, cryptography' 2>/dev/null; then
    "$venv/bin/pip" install --quiet --disable-pip-version-check scapy cryptography
fi
if [ -z "${HIPSEC_BIN:-}" ]; then
    cargo build --release --quiet -p hipsec
    HIPSEC_BIN="$root/target/release/hipsec"
fi
export HIPSEC_BIN
"$venv/bin/python" "$root/tests/interop/scapy_esp.py" "$@"
exec "$venv/bin/python" "$root/tests/interop/scapy_mip6.py"
