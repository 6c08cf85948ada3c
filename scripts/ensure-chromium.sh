#!/usr/bin/env bash
# Installs Debian's chromium when it is missing: the browser tests (js/tests, python/tests) drive it
# headless through playwright, which downloads no browser of its own here.
set -euo pipefail
if [ ! -x /usr/bin/chromium ]; then
    echo "installing chromium (Debian)"
    sudo_=""; [ "$(id -u)" = 0 ] || sudo_="sudo"
    $sudo_ apt-get update -qq && $sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
