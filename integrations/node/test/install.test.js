'use strict';

// Installs the package the ways docs/integrations.md says, into a fresh app
// folder that has its own rate-limiter-flexible: `npm install <path>` (a
// symlink to this checkout, whose node_modules holds another copy of
// rate-limiter-flexible) and `npm pack` + install of the tarball. Either way
// a rejection must be the app's RateLimiterRes and RateLimiterUnion must
// take the limiter. Everything comes from local tarballs (--offline): no
// registry is needed. No rlstore is needed either: a stub sendCommand denies.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const pkg = path.resolve(__dirname, '..');
const npm = (cwd, ...args) => execFileSync('npm', [...args, '--no-audit', '--no-fund', '--offline'], { cwd, encoding: 'utf8', stdio: 'pipe' });

// The app's own check, run with the app's node_modules.
const check = `
const flexible = require('rate-limiter-flexible');
const { RateLimiterRlstore } = require('rlstore-ratelimit');
const rl = new RateLimiterRlstore({ points: 1, duration: 1, sendCommand: async () => [0, 1, 0, 500, 500] });
new flexible.RateLimiterUnion(rl, new flexible.RateLimiterMemory({ points: 1, duration: 1 }));
rl.consume('k').then(() => { throw new Error('admitted'); }, (rej) => {
  if (!(rej instanceof flexible.RateLimiterRes)) throw new Error('not the app\\'s RateLimiterRes: ' + rej);
  console.log('ok', require.resolve('rate-limiter-flexible'));
});
`;

function freshApp(tmp, name) {
  const app = path.join(tmp, name);
  fs.mkdirSync(app);
  fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name, version: '1.0.0', private: true }));
  fs.writeFileSync(path.join(app, 'check.js'), check);
  return app;
}

test('npm install <path> and npm pack: the app\'s rate-limiter-flexible classes', { timeout: 120_000 }, () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rlstore-install-'));
  try {
    const flexibleTgz = path.join(tmp, npm(tmp, 'pack', path.join(pkg, 'node_modules', 'rate-limiter-flexible')).trim().split('\n').pop());
    const ourTgz = path.join(tmp, npm(tmp, 'pack', pkg).trim().split('\n').pop());
    for (const [name, source] of [['by-path', pkg], ['by-tarball', ourTgz]]) {
      const app = freshApp(tmp, name);
      npm(app, 'install', flexibleTgz, source);
      const out = execFileSync(process.execPath, ['check.js'], { cwd: app, encoding: 'utf8' });
      assert.match(out, /^ok /, name);
      assert.ok(out.includes(path.join(app, 'node_modules', 'rate-limiter-flexible')), `${name}: ${out}`);
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
