#!/usr/bin/env bash
# klag-exporter (a Rust Kafka lag exporter on crates.io) for the side-by-side benchmark
# (benchmarks/burrow.py), built into the repository's git-ignored cache: .cache/klag-exporter/bin.
# It needs Rust's cargo and the headers of libsasl2 and libcurl (Debian: libsasl2-dev,
# libcurl4-openssl-dev), which this script installs with apt-get when run as root.
set -euo pipefail
VERSION="${KLAG_EXPORTER_VERSION:-0.1.29}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)/.cache/klag-exporter"
if [ -x "$ROOT/bin/klag-exporter" ] && "$ROOT/bin/klag-exporter" --version | grep -q "$VERSION"; then
  exit 0
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo not found: install Rust (https://rustup.rs) to build klag-exporter" >&2
  exit 1
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    libsasl2-dev libcurl4-openssl-dev >/dev/null
fi
echo "building klag-exporter $VERSION into $ROOT (a few minutes)..."
cargo install --locked klag-exporter --version "$VERSION" --root "$ROOT"
