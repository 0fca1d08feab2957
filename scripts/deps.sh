#!/usr/bin/env bash
# Installs the Debian packages Kiln's build and tests need, only when missing.
# Idempotent: a machine that has everything runs no apt-get at all.
set -euo pipefail

pkgs=(
  build-essential pkg-config
  libevent-dev libnghttp2-dev libcurl4-openssl-dev libsqlite3-dev sqlite3
  libdeflate-dev libzstd-dev libjansson-dev libfyaml-dev libxxhash-dev libssl-dev
  libcmocka-dev strace
  clang libclang-rt-14-dev
  golang-go nodejs npm curl ca-certificates nghttp2-client
  kubernetes-client
  chromium                  # the web UI tests (tests/blackbox/ui-*.test.mjs) drive it with playwright-core
  clickhouse-server         # the ClickHouse store engine's tests start it on loopback (tests/blackbox/lib/clickhouse.mjs)
  zookeeper                 # distributed DDL for the ClickHouse cluster test (tests/blackbox/clickhouse-cluster.test.mjs)
)

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

# nodejs/npm may come from elsewhere than Debian (a newer node on PATH): accept that.
if command -v node >/dev/null && command -v npm >/dev/null; then
  filtered=()
  for p in "${missing[@]}"; do
    case "$p" in nodejs|npm) ;; *) filtered+=("$p") ;; esac
  done
  missing=("${filtered[@]+"${filtered[@]}"}")
fi

# kubectl may come from elsewhere too (Google's "kubectl" package owns
# /usr/bin/kubectl and conflicts with Debian's kubernetes-client): accept it.
if command -v kubectl >/dev/null; then
  filtered=()
  for p in "${missing[@]+"${missing[@]}"}"; do
    [ "$p" = kubernetes-client ] || filtered+=("$p")
  done
  missing=("${filtered[@]+"${filtered[@]}"}")
fi

if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "deps.sh: missing packages: ${missing[*]} (run as root to install)" >&2
    exit 1
  fi
  echo "deps.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
