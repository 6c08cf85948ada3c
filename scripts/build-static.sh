#!/usr/bin/env bash
# Builds a static, stripped quota-hub for Linux on one architecture and prints its path:
#     bash scripts/build-static.sh amd64|arm64
# amd64 is x86_64-unknown-linux-musl with Debian's musl-tools; arm64 is aarch64-unknown-linux-musl
# cross-built with Debian's gcc-aarch64-linux-gnu (for the bundled SQLite's C) and Rust's own lld
# (for the link), so no aarch64 musl toolchain is needed. Installs the Rust target and the Debian
# package when missing. The engine component (target/wasm) and the admin page's modules (js/gen)
# must be built first (scripts/build-wasm.sh, scripts/build-js.sh). QUOTA_BUILD_REVISION (default:
# the checkout's commit) goes into quota_build_info. Used by scripts/build-image.sh,
# scripts/release.sh and deploy/image/Dockerfile, so every image carries the same build.
set -euo pipefail
cd "$(dirname "$0")/.."
sudo_=""; [ "$(id -u)" = 0 ] || sudo_="sudo"
arch=${1:?usage: build-static.sh amd64|arm64}
need_deb() { # command package
    command -v "$1" >/dev/null && return
    echo "installing $2 (Debian)" >&2
    $sudo_ apt-get update -qq && $sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null
}
case "$arch" in
    amd64)
        target=x86_64-unknown-linux-musl
        need_deb musl-gcc musl-tools
        ;;
    arm64)
        target=aarch64-unknown-linux-musl
        need_deb aarch64-linux-gnu-gcc gcc-aarch64-linux-gnu
        export CC_aarch64_unknown_linux_musl=aarch64-linux-gnu-gcc
        # glibc's headers would make SQLite call open64 and friends, which musl does not have.
        export CFLAGS_aarch64_unknown_linux_musl=-DSQLITE_DISABLE_LFS
        export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER=rust-lld
        ;;
    *) echo "build-static.sh: unknown architecture \`$arch\` (amd64 or arm64)" >&2; exit 2 ;;
esac
rustup target list --installed 2>/dev/null | grep -q "^$target\$" || rustup target add "$target" >&2
for f in target/wasm/quota-engine.wasm js/gen/source.json; do
    [ -f "$f" ] || { echo "build-static.sh: $f is missing: run scripts/build-wasm.sh and scripts/build-js.sh first" >&2; exit 1; }
done
QUOTA_BUILD_REVISION=${QUOTA_BUILD_REVISION:-$(git rev-parse HEAD 2>/dev/null || echo unknown)} \
    CARGO_PROFILE_RELEASE_STRIP=symbols cargo build --release --locked -q -p quota-hub --target "$target" >&2
echo "target/$target/release/quota-hub"
