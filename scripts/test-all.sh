#!/usr/bin/env bash
# The whole test suite, from a fresh clone on a Debian machine (root for apt; no root needed when
# the tools are already there). Installs what it needs, runs every check, exits non-zero on failure.
#   formatting, clippy -D warnings, rustdoc -D warnings, unit/integration/property tests,
#   the scapy cross-checks (tests/interop: ESP/AH, and a scapy Mobile IPv6 mobile node against the
#   home agent in network namespaces), the lab report in headless Chromium
#   (scripts/report-check.sh), and every fuzz target for FUZZ_SECONDS (default 10).
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_SECONDS="${FUZZ_SECONDS:-10}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
# A clean build gains nothing from incremental state, which only costs time and disk.
[ -d target/debug ] || export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
step() { printf '\n==> %s (at %d s)\n' "$*" "$SECONDS"; }

step "system packages"
need_apt=()
# jq and xxd: the docs' and the help texts' examples pipe through them, and their tests run them.
for tool in tshark:tshark tcpdump:tcpdump iperf3:iperf3 nft:nftables ip:iproute2 ping:iputils-ping chromium:chromium ffmpeg:ffmpeg \
    jq:jq xxd:xxd; do
  command -v "${tool%%:*}" >/dev/null 2>&1 || need_apt+=("${tool##*:}")
done
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need_apt+=(python3-venv)
# strongSwan 5.9 as the IKEv2 interop peer (charon with kernel-libipsec: user-space ESP,
# ../shared/reference/strongswan-peer.md); its services must not start on install.
[ -x /usr/lib/ipsec/charon ] && command -v swanctl >/dev/null 2>&1 || need_apt+=(strongswan-charon
  strongswan-swanctl libcharon-extra-plugins libstrongswan-standard-plugins
  libstrongswan-extra-plugins)
# Its `pki` CA tool makes the certificates of the certificate interop tests.
command -v pki >/dev/null 2>&1 || need_apt+=(strongswan-pki)
if [ "${#need_apt[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections || true
    # No service may start during the install (charon would take ports 500 and 4500).
    rc_d_made=""
    if [ ! -e /usr/sbin/policy-rc.d ]; then
      printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
      rc_d_made=1
    fi
    apt-get install -y -qq "${need_apt[@]}" >/dev/null
    if [ -n "$rc_d_made" ]; then rm -f /usr/sbin/policy-rc.d; fi
  else
    echo "missing ${need_apt[*]} and not root: the tests that need them will say SKIPPED"
  fi
fi

step "rust toolchain components"
rustup component add rustfmt clippy >/dev/null 2>&1 || true

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

step "cargo check of the fuzz targets"
# The fuzz crate is outside the workspace: without this a changed type breaks a target only
# when the fuzz step builds it, at the end of the run.
cargo check --manifest-path fuzz/Cargo.toml --bins --quiet

step "cargo doc -D warnings"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet

step "python venv (scapy, cryptography, playwright) for the cross-checks the tests run"
# Before cargo test: the tests that cross-check against scapy/cryptography (ESP, IKEv2 wire
# and key schedule) skip without it.
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -c 'import scapy, cryptography, playwright' 2>/dev/null ||
  .venv/bin/pip install --quiet --disable-pip-version-check scapy cryptography playwright

step "cargo test"
# The lab's node test drives the real binary: build it before the tests run.
cargo build -p hipsec --quiet
cargo test --workspace

step "lab report in headless Chromium"
# Re-renders a committed results folder from its JSON, opens its pages, saves screenshots there.
report_dir="$(mktemp -d)"
cp -r docs/results/2026-11-25/hip-bex-full-b4962dc "$report_dir/"
HIPSEC_BIN="$PWD/target/debug/hipsec" bash scripts/report-check.sh "$report_dir/hip-bex-full-b4962dc"
rm -rf "$report_dir"

step "scapy cross-check"
# The debug binary the tests built: the cross-checks test behaviour, not speed, and a release
# build here cost as long as the checks themselves.
HIPSEC_BIN="$PWD/target/debug/hipsec" bash tests/interop/run.sh

step "fuzz targets (${FUZZ_SECONDS}s each)"
bash scripts/fuzz.sh "$FUZZ_SECONDS"

printf '\nall checks passed in %d s\n' "$SECONDS"
