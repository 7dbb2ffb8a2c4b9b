'use strict';

const path = require('node:path');

// peer loads an optional peer dependency the way the application sees it.
// `npm install /path/to/integrations/node` makes a symlink, and Node resolves
// a symlinked package's require() from its real path, so a plain require
// would find the checkout's own devDependencies: another copy of
// rate-limiter-flexible, whose RateLimiterRes the application's instanceof
// does not know. The application's folders are tried first. It returns
// { mod, dir } (dir: the folder of the package's main file), or null.
function peer(name) {
  const bases = [process.cwd()];
  if (require.main && require.main.path) bases.unshift(require.main.path);
  for (const base of bases) {
    try {
      return loaded(require.resolve(name, { paths: [base] }));
    } catch {
      // not installed there
    }
  }
  try {
    return loaded(require.resolve(name));
  } catch {
    return null;
  }
}

function loaded(file) {
  return { mod: require(file), dir: path.dirname(file) };
}

module.exports = { peer };
