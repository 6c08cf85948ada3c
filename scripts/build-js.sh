#!/usr/bin/env bash
# The JavaScript side of the engine: installs js/'s pinned packages (better-sqlite3 is built from
# source against Node's own headers: no prebuilt binary can be downloaded here) and transpiles the
# engine component with jco into js/gen (and the fault build into js/gen-fault when it exists).
# quota-hub embeds js/gen for its admin page, and the Python wheel carries it too.
# Needs Node 20+ with npm, g++ and make, and target/wasm/quota-engine.wasm (scripts/build-wasm.sh).
# `--deps`: only the packages (no component needed: scripts/test-all.sh installs them beside the
# component's build).
set -euo pipefail
cd -P "$(dirname "$0")/../js"  # -P: the checkout, also when called through a symlink
need=()
command -v npm >/dev/null || need+=(nodejs npm)
command -v g++ >/dev/null || need+=(g++)
command -v make >/dev/null || need+=(make)
if [ ${#need[@]} -gt 0 ]; then
    echo "installing ${need[*]} (Debian packages)"
    sudo_=""; [ "$(id -u)" = 0 ] || sudo_="sudo"
    $sudo_ apt-get update -qq && $sudo_ apt-get install -y -qq "${need[@]}" >/dev/null
fi
if [ -z "${npm_config_nodedir:-}" ] && [ -f /usr/include/node/node.h ]; then export npm_config_nodedir=/usr; fi
# `npm install --no-save` installs what package-lock.json pins and leaves it as it is; `npm ci` refuses
# this lock because jco's optional per-platform packages for other platforms have no entries in it.
npm install --no-save --no-audit --no-fund --loglevel=error
[ "${1:-}" = --deps ] || npm run -s build
