#!/usr/bin/env bash
# The alert-rule and dashboard tests need Prometheus' promtool and server (Debian package `prometheus`).
set -euo pipefail
if command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Prometheus (promtool) from Debian packages..."
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  # Debian's package starts a service on install in some setups; the tests start their own.
  (command -v systemctl >/dev/null 2>&1 && systemctl stop prometheus 2>/dev/null) || true
  pkill -x prometheus 2>/dev/null || true
else
  echo "promtool not found: install Debian's 'prometheus' package (sudo apt-get install prometheus); the rule tests will be skipped." >&2
fi
