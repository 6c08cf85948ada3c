#!/usr/bin/env bash
# Builds quota-hub's container image without a container engine, as an OCI image layout in
# target/image/quota-hub (the same image as deploy/image/Dockerfile): the engine component, a
# static quota-hub for x86_64-unknown-linux-musl (stripped, scripts/build-static.sh), then
# tools/oci-image writes the layout (amd64 only: scripts/release.sh builds the amd64 + arm64
# image). Copy it to a registry with e.g.
# `skopeo copy oci:target/image/quota-hub:0.2.0 docker://registry.example.org/quota-hub:0.2.0`.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f target/wasm/quota-engine.wasm ] || bash scripts/build-wasm.sh
[ -f js/gen/source.json ] || bash scripts/build-js.sh
version=$(cat VERSION)
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
# The commit goes into quota_build_info too.
binary=$(QUOTA_BUILD_REVISION=$revision bash scripts/build-static.sh amd64)
created=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
cargo run --locked -q -p oci-image -- --binary "$binary" \
    --values deploy/image/values.yaml --out target/image/quota-hub \
    --version "$version" --revision "$revision" --created "$created"
