#!/usr/bin/env bash
# The JavaScript package (js/): installs it (better-sqlite3 is built from source against Node's own
# headers), transpiles the engine component with jco into js/gen, and runs `node --test`.
# Needs Node 20+ with npm, g++ and make, and the components (scripts/build-wasm.sh --fault); installs
# Debian's chromium for the browser test when it is missing.
set -euo pipefail
cd "$(dirname "$0")/../js"
if [ ! -x /usr/bin/chromium ]; then
    sudo_=""; [ "$(id -u)" = 0 ] || sudo_="sudo"
    $sudo_ apt-get update -qq && $sudo_ apt-get install -y -qq chromium >/dev/null
fi
# No prebuilt binary can be downloaded here; build better-sqlite3 against the installed Node headers.
if [ -z "${npm_config_nodedir:-}" ] && [ -f /usr/include/node/node.h ]; then export npm_config_nodedir=/usr; fi
# `npm install --no-save` installs what package-lock.json pins and leaves it as it is; `npm ci` refuses
# this lock because jco's optional per-platform packages for other platforms have no entries in it.
npm install --no-save --no-audit --no-fund --loglevel=error
npm run -s build
node --test test/
