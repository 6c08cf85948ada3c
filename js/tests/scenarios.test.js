// Every scenario through the Node bridge, over `:memory:` and over a file, byte for byte as the
// native core and as the OpenAPI document says; quota-hub then reads a file the Node bridge wrote.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { QuotaEngine } from '../src/node.js';
import { problems } from './support/openapi-check.js';
import { REPO, files, load, nativeTranscripts, replay, rustBin } from './support/scenarios.js';

const dir = mkdtempSync(join(tmpdir(), 'quota-js-'));

for (const where of [':memory:', 'file']) {
  test(`every scenario over ${where} matches the native core`, () => {
    const want = nativeTranscripts();
    for (const f of files()) {
      const db = where === 'file' ? join(dir, f.replace('.json', '.db')) : ':memory:';
      const sent = new Map(want[f].map((x) => [x.step, x.sent]));
      const got = replay(load(f), (values) => new QuotaEngine(db, values), sent);
      assert.deepEqual(problems(got), [], `${f}: not as the OpenAPI document says`);
      assert.equal(got.length, want[f].length, f);
      got.forEach((g, i) => assert.deepEqual(g, want[f][i], `${f} step ${want[f][i].step} ${want[f][i].request}`));
    }
  });
}

test('quota-hub reads a file the Node bridge wrote', () => {
  const db = join(dir, 'shared.db');
  const e = new QuotaEngine(db, { custom: { authMode: 'github' } });
  e.adminUpdate('zoe', 'set', 321, {}, 1795000000);
  e.close();
  const out = execFileSync(rustBin('quota-hub', 'quota-hub'), ['list-quota', '--db', db], { cwd: REPO, encoding: 'utf8' });
  const line = out.split('\n').find((l) => l.split(/\s+/)[0] === 'zoe');
  assert.ok(line && line.split(/\s+/).includes('321'), out);
});
