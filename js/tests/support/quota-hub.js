// A real `quota-hub serve` on a free port over a temporary SQLite file, for the page tests and the
// page benchmark; and a headless Chromium (Debian's, driven by playwright-core).
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';

import { chromium } from 'playwright-core';

import { REPO, rustBin } from './scenarios.js';

export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
/** Screenshots and other files a run leaves for a person to look at. */
export const ARTIFACTS = join(REPO, 'target', 'test-artifacts');

export function launchBrowser() {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium (scripts/test-js.sh does)`);
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}

export function screenshotPath(name) {
  const path = join(ARTIFACTS, name);
  mkdirSync(dirname(path), { recursive: true });
  return path;
}

export class QuotaHub {
  /** Starts `quota-hub serve` with `values` (a values document) and an admin token. */
  static async start(values, extra = []) {
    const bin = rustBin('quota-hub', 'quota-hub');
    const dir = mkdtempSync(join(tmpdir(), 'quota-page-'));
    const db = join(dir, 'q.db');
    const valuesFile = join(dir, 'values.yaml');
    writeFileSync(valuesFile, JSON.stringify(values)); // JSON is YAML
    const issue = (user, args) => execFileSync(bin, ['token', 'issue', '--db', `sqlite://${db}`, '--user', user, ...args], { encoding: 'utf8' }).trim();
    const admin = issue('root', ['--admin']);
    const hubToken = issue('hub', ['--scope', 'quota:sessions']);
    const child = spawn(bin, ['serve', '--db', `sqlite://${db}`, '--values', valuesFile, '--listen', '127.0.0.1:0', ...extra], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const stderr = [];
    createInterface({ input: child.stderr }).on('line', (l) => stderr.push(l));
    const url = await new Promise((resolve, reject) => {
      const lines = createInterface({ input: child.stdout });
      lines.on('line', (l) => {
        const m = l.match(/listening on (http:\/\/\S+?)\/?$/);
        if (m) resolve(m[1]);
      });
      child.on('exit', (code) => reject(new Error(`quota-hub exited with ${code} before listening:\n${stderr.join('\n')}`)));
    });
    return new QuotaHub({ bin, dir, db, child, url, admin, hubToken, stderr });
  }

  constructor(fields) {
    Object.assign(this, fields);
  }

  /** A request with the admin token (or `token`); the parsed JSON answer and status. */
  async call(method, path, body, token = this.admin) {
    const res = await fetch(this.url + path, {
      method,
      headers: { Authorization: `token ${token}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, json: await res.json() };
  }

  async user(name) {
    const r = await this.call('GET', `/admin/api/quota/users/${encodeURIComponent(name)}`);
    return r.json;
  }

  async set(name, amount) {
    const r = await this.call('POST', `/admin/api/quota/users/${encodeURIComponent(name)}`, { action: 'set', amount });
    if (r.status !== 200) throw new Error(JSON.stringify(r));
  }

  async stop() {
    if (this.child.exitCode !== null) return;
    const done = new Promise((resolve) => this.child.on('exit', resolve));
    this.child.kill('SIGTERM');
    await done;
  }
}
