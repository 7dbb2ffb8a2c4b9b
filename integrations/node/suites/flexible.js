'use strict';

// Runs rate-limiter-flexible's own RateLimiterRedis tests
// (test/RateLimiterRedis.ioredis.test.js of its repository at 11.1.0, in
// $RLSTORE_SUITES/rate-limiter-flexible: see suites.sh; their code is not
// part of this repository) with RateLimiterRlstore substituted, against
// the rlstore at RLSTORE_ADDR, and compares the outcome with
// flexible-expected.js: every test passes except those listed there, each
// with why. A listed test that passes fails the run too, so the list stays
// true. integrations/TestNodeFlexibleSuite runs it once per algorithm; by hand:
//
//   RLSTORE_SUITES=/tmp/suites RLSTORE_ADDR=127.0.0.1:6379 node suites/flexible.js [slide|fixed]
//
// slide is RateLimiterRlstore's default; fixed is RateLimiterRedis's own
// window (from the first consume), which this suite was written for. The
// suite flushes the database after every test: use a scratch rlstore.
//
// Its tests read the counter RateLimiterRedis keeps with GET, which rlstore
// does not have (a key holds a decision's state, not a string). Each
// `redisMockClient.get(key)` is answered instead by rlstoreGet: the count
// rlstore itself reports for the key with RL.INFO, plus that of the key's
// override (what set() and block() keep), as a string, or null when
// neither key exists, as GET answers for a missing key. So a test still
// checks what the server holds, read through rlstore's own read command.
const fs = require('node:fs');
const path = require('node:path');
const Mocha = require('mocha');
const expectedByAlgorithm = require('./flexible-expected');

const addr = process.env.RLSTORE_ADDR;
if (!addr) {
  console.error('RLSTORE_ADDR is not set: start rlstore and set it to host:port');
  process.exit(2);
}
const [host, port] = addr.split(':');
const algorithm = process.argv[2] ?? 'slide';
if (!(algorithm in expectedByAlgorithm)) {
  console.error(`algorithm must be one of ${Object.keys(expectedByAlgorithm).join(', ')}`);
  process.exit(2);
}
const expected = expectedByAlgorithm[algorithm];

const suites = process.env.RLSTORE_SUITES;
if (!suites) {
  console.error('RLSTORE_SUITES is not set: run suites/suites.sh and set it to the folder it made');
  process.exit(2);
}
const upstream = path.join(suites, 'rate-limiter-flexible', 'test', 'RateLimiterRedis.ioredis.test.js');
const src = fs.readFileSync(upstream, 'utf8');
const substitutions = [
  ["const RateLimiterRedis = require('../lib/RateLimiterRedis');",
    // The store's 250 ms default is for production; a busy CI host can
    // answer later, and the suite tests no timeouts.
    "const { RateLimiterRlstore } = require('../../');\n"
    + `const RateLimiterRedis = class extends RateLimiterRlstore { constructor(opts) { super({ timeout: 10000, algorithm: '${algorithm}', ...opts }); } };\n`
    + `${rlstoreGet}`],
  ['redisMockClient.get(', 'rlstoreGet(redisMockClient, '],
  ['port: 6379', `port: ${Number(port)}`],
  ["host: '127.0.0.1'", `host: '${host}'`],
];
let test = src;
// The count of a RateLimiterRlstore key as GET of RateLimiterRedis's would
// read it; its override key is '<keyPrefix>!block:<key>' (lib/limiter.js).
function rlstoreGet(client, rlKey) {
  const at = rlKey.indexOf(':');
  const override = `${rlKey.slice(0, at)}!block:${rlKey.slice(at + 1)}`;
  return Promise.all([client.call('RL.INFO', rlKey), client.call('RL.INFO', override)]).then((infos) => {
    const counts = infos.filter(Boolean).map((f) => Number(f[f.indexOf('count') + 1]));
    return counts.length === 0 ? null : String(counts.reduce((a, b) => a + b, 0));
  });
}
for (const [from, to] of substitutions) {
  if (!test.includes(from)) throw new Error(`${upstream} no longer has ${from}`);
  test = test.split(from).join(to);
}
const dir = path.join(__dirname, '.run');
fs.mkdirSync(dir, { recursive: true });
const file = path.join(dir, 'flexible-redis.test.js');
fs.writeFileSync(file, test);

const mocha = new Mocha({ reporter: 'dot' });
mocha.addFile(file);
const passed = [];
const failed = new Map();
const runner = mocha.run(() => {
  const problems = [];
  for (const [title, err] of failed) {
    if (!(title in expected)) problems.push(`FAILED (not expected): ${title}\n    ${err}`);
  }
  for (const title of passed) {
    if (title in expected) problems.push(`PASSED but listed as failing in flexible-expected.js: ${title}`);
  }
  for (const title of Object.keys(expected)) {
    if (!passed.includes(title) && !failed.has(title)) problems.push(`listed but not run: ${title}`);
  }
  const total = passed.length + failed.size;
  console.log(`\nrate-limiter-flexible RateLimiterRedis suite with RateLimiterRlstore (algorithm '${algorithm}'): ${passed.length} of ${total} pass`);
  for (const [title, err] of failed) {
    console.log(`  failing: ${title}: ${expected[title] ?? err}`);
  }
  for (const p of problems) console.log(p);
  process.exit(problems.length > 0 ? 1 : 0);
});
runner.on('pass', (t) => passed.push(t.fullTitle()));
runner.on('fail', (t, err) => failed.set(t.fullTitle(), String(err && err.message).split('\n')[0]));
