#!/usr/bin/env bash
# Builds quota-hub's container image without a container engine, as an OCI image layout in
# target/image/quota-hub (the same image as deploy/image/Dockerfile): the engine component, a
# static quota-hub for x86_64-unknown-linux-musl (stripped), then tools/oci-image writes the
# layout. Installs the musl target and Debian's musl-tools (a C compiler for the bundled SQLite)
# when missing. Copy it to a registry with e.g. `skopeo copy oci:target/image/quota-hub:0.2.0
# docker://registry.example.org/quota-hub:0.2.0`.
set -euo pipefail
cd "$(dirname "$0")/.."
sudo_=""; [ "$(id -u)" = 0 ] || sudo_="sudo"
target=x86_64-unknown-linux-musl
rustup target list --installed 2>/dev/null | grep -q "^$target\$" || rustup target add "$target"
if ! command -v musl-gcc >/dev/null; then
    echo "installing musl-tools (Debian)"
    $sudo_ apt-get update -qq && $sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq musl-tools >/dev/null
fi
[ -f target/wasm/quota-engine.wasm ] || bash scripts/build-wasm.sh
[ -f js/gen/source.json ] || bash scripts/build-js.sh
version=$(cat VERSION)
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
# The commit goes into quota_build_info too.
QUOTA_BUILD_REVISION=$revision CARGO_PROFILE_RELEASE_STRIP=symbols \
    cargo build --release --locked -q -p quota-hub --target "$target"
created=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
cargo run --locked -q -p oci-image -- --binary "target/$target/release/quota-hub" \
    --values deploy/image/values.yaml --out target/image/quota-hub \
    --version "$version" --revision "$revision" --created "$created"
