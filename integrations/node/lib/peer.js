'use strict';

// peer loads an optional peer dependency the way the application sees it.
// `npm install /path/to/integrations/node` makes a symlink, and Node resolves
// a symlinked package's require() from its real path, so a plain require
// would find the checkout's own devDependencies: another copy of
// rate-limiter-flexible, whose RateLimiterRes the application's instanceof
// does not know. The application's folders are tried first.
function peer(name) {
  const bases = [process.cwd()];
  if (require.main && require.main.path) bases.unshift(require.main.path);
  for (const base of bases) {
    try {
      return require(require.resolve(name, { paths: [base] }));
    } catch {
      // not installed there
    }
  }
  try {
    return require(name);
  } catch {
    return null;
  }
}

module.exports = { peer };
