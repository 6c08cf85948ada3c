#!/usr/bin/env bash
# Builds a release of this checkout into dist/ (DIST=... for elsewhere), every artifact a user
# installs, with its checksum:
#   jupyterhub_quota-V-py3-none-any.whl       the JupyterHub package (pip)
#   jupyterlab_quota-V-py3-none-any.whl       JupyterLab's extension, for single-user images (pip)
#   quota-engine-js-V.tgz                     the npm package (npm pack)
#   quota-hub-V-linux-amd64, -linux-arm64     static quota-hub binaries
#   quota-hub-image-V.oci.tar                 the image, amd64 + arm64, as an OCI archive
#   quota-hub-V.tgz                           the Helm chart
#   quota-hub-V.cdx.json                      SBOM of the quota-hub binary (cargo-cyclonedx)
#   quota-engine-V.cdx.json                   SBOM of the engine component both carry (cargo-cyclonedx)
#   jupyterhub_quota-V.cdx.json               SBOM of the wheel's environment (cyclonedx-py)
#   SHA256SUMS                                `sha256sum -c SHA256SUMS` in dist/ checks them all
# Times come from SOURCE_DATE_EPOCH (default: the commit's time), so a rebuild of the same commit
# gives the same bytes. The arm64 binary is checked as a static aarch64 ELF and, when qemu-user is
# installed (qemu-aarch64), run. Installs what it needs: Rust targets, Debian's musl-tools and
# gcc-aarch64-linux-gnu, cargo-cyclonedx (target/tools), python/requirements-release.txt
# (target/release-venv). .github/workflows/release.yml runs it on a tag and publishes dist/.
# `--check` is the test command's (scripts/test-all.sh): the release path on what the tests already
# built, one platform: the wheels, the npm package, the amd64 binary (the image's own static build),
# the amd64 image as an OCI archive, the chart and the checksums; no arm64 cross build and no SBOMs,
# which only a release needs (the release workflow runs this script whole, then
# python/tests/test_release.py on what it wrote).
set -euo pipefail
check=""; [ "${1:-}" = --check ] && check=1
archs=(amd64 arm64); [ -z "$check" ] || archs=(amd64)
cd "$(dirname "$0")/.."
version=$(cat VERSION)
revision=$(git rev-parse HEAD)
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
export QUOTA_BUILD_REVISION=$revision
dist=${DIST:-dist}
step() { printf '\n== release %s: %s\n' "$version" "$*"; }
fail() { echo "release.sh: $*" >&2; exit 1; }

if [ -n "$check" ]; then step "tools (target/release-venv)"; else step "tools (target/release-venv, cargo-cyclonedx in target/tools)"; fi
venv=target/release-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r python/requirements-release.txt
cdx_version=0.5.9
if [ -z "$check" ] && ! target/tools/bin/cargo-cyclonedx cyclonedx --version 2>/dev/null | grep -q " $cdx_version\$"; then
    cargo install -q --locked --root target/tools cargo-cyclonedx --version "=$cdx_version"
fi

step "the engine component and the admin page's modules"
bash scripts/build-wasm.sh
bash scripts/build-js.sh
rm -rf "$dist"
mkdir -p "$dist"

step "the wheel"
"$venv/bin/python" -m pip wheel -q --disable-pip-version-check --no-deps -w "$dist" ./python
wheel=$(ls "$dist"/jupyterhub_quota-"$version"-py3-none-any.whl) || fail "the wheel is not jupyterhub_quota-$version"

step "JupyterLab's extension (jupyterlab-quota: the prebuilt labextension and its server extension)"
bash scripts/build-lab.sh "$venv/bin/python" >/dev/null
cp target/lab-dist/jupyterlab_quota-"$version"-py3-none-any.whl "$dist/" || fail "the lab wheel is not jupyterlab_quota-$version"

step "the npm package"
(cd js && npm pack --loglevel=error --pack-destination "$OLDPWD/$dist" >/dev/null)
[ -f "$dist/quota-engine-js-$version.tgz" ] || fail "npm pack did not write quota-engine-js-$version.tgz"

step "static quota-hub binaries (${archs[*]})"
for arch in "${archs[@]}"; do
    # amd64: the image's own build (scripts/build-image.sh), nothing to do when it is current.
    binary=$(bash scripts/build-static.sh "$arch")
    "$venv/bin/python" scripts/check_elf.py "$binary" "$arch"
    cp "$binary" "$dist/quota-hub-$version-linux-$arch"
done
if [ -n "$check" ]; then
    echo "a release check: the arm64 binary is a release's only"
elif command -v qemu-aarch64 >/dev/null; then
    out=$(qemu-aarch64 "$dist/quota-hub-$version-linux-arm64" --version)
    [ "$out" = "quota-hub $version" ] || fail "the arm64 binary under qemu-aarch64 said \`$out\`"
    echo "arm64 binary under qemu-aarch64: $out"
else
    echo "qemu-aarch64 is not installed (Debian: qemu-user): the arm64 binary was checked, not run"
fi

step "the image (${archs[*]}) as an OCI archive"
layout=target/release-image
binaries=()
for arch in "${archs[@]}"; do binaries+=(--binary "$arch=$dist/quota-hub-$version-linux-$arch"); done
cargo run --locked -q -p oci-image -- "${binaries[@]}" \
    --values deploy/image/values.yaml --out "$layout" \
    --version "$version" --revision "$revision" --created "$SOURCE_DATE_EPOCH"
tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
    -C "$layout" -cf "$dist/quota-hub-image-$version.oci.tar" oci-layout index.json blobs

step "the Helm chart"
"$venv/bin/python" -c 'import sys, helm_python as h; print(h.package(sys.argv[1], destination=sys.argv[2]))' \
    deploy/helm/quota-hub "$dist" >/dev/null
[ -f "$dist/quota-hub-$version.tgz" ] || fail "the chart did not package as quota-hub-$version.tgz"

if [ -n "$check" ]; then
    step "checksums (a release check: no SBOMs)"
    (cd "$dist" && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%f\n' | LC_ALL=C sort | xargs sha256sum > SHA256SUMS)
    cat "$dist/SHA256SUMS"
    echo "release check $version ($revision) in $dist/"
    exit 0
fi

step "SBOMs (CycloneDX 1.5)"
cdx() { # manifest target out
    target/tools/bin/cargo-cyclonedx cyclonedx -q --manifest-path "$1" --format json --spec-version 1.5 \
        --target "$2" --no-build-deps --override-filename release-sbom
    # Its references name crates by the checkout's absolute path: the same from any checkout.
    sed "s|path+file://$PWD/|path+file://./|g" "$(dirname "$1")/release-sbom.json" > "$3"
    git ls-files --others --exclude-standard -- '*release-sbom.json' | xargs -r rm -f
}
cdx hub/Cargo.toml x86_64-unknown-linux-musl "$dist/quota-hub-$version.cdx.json"
cdx wasm/Cargo.toml wasm32-unknown-unknown "$dist/quota-engine-$version.cdx.json"
# The wheel's: what `pip install` of it brings (pinned as the tests run it), in an environment of
# its own without pip, so only the package and its dependencies are listed.
sbom_env=target/release-sbom-env
rm -rf "$sbom_env"
python3 -m venv --without-pip "$sbom_env"
"$venv/bin/python" -m pip --python "$sbom_env/bin/python" install -q --disable-pip-version-check \
    -c python/constraints-test.txt "$wheel"
"$venv/bin/cyclonedx-py" environment --pyproject python/pyproject.toml --spec-version 1.5 --output-format JSON \
    --output-reproducible -o "$dist/jupyterhub_quota-$version.cdx.json" "$sbom_env/bin/python"

step "checksums"
(cd "$dist" && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%f\n' | LC_ALL=C sort | xargs sha256sum > SHA256SUMS)
cat "$dist/SHA256SUMS"
echo "release $version ($revision) in $dist/"
