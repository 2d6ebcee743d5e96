/**
 * The layering of engine/ and of api/ (docs/architecture.md), checked by `npm test`. Their folders, bottom to
 * top: a folder imports only folders below it, and only through their faces (index.ts).
 */
const LAYERS = [
  'model',
  'telemetry',
  'secrets',
  'outbound',
  'expressions',
  'store',
  'triggers',
  'plugins',
  'nodes',
  'flow',
  'runtime',
  'redis',
  'limits',
  'queue',
  'background',
  'alerts',
  'intake',
  'services',
];

/** api/'s folders, bottom to top; at its root only the app and its context. */
const API_LAYERS = ['http', 'auth', 'route-kit', 'openapi', 'flow-url', 'family-routes', 'routes', 'pages'];

/** A forbidden dependency: from modules matching `from` to modules matching `to`. */
const rule = (name, comment, from, to) => ({ name, comment, severity: 'error', from, to });

/** In `root`, each folder of `layers` imports none above it. */
const upwardIn = (root, layers) =>
  layers
    .slice(0, -1)
    .map((layer, index) =>
      rule(
        `${root}-${layer}-imports-only-below`,
        `${root}/${layer} may import only the folders below it: ${layers.slice(0, index).join(', ') || 'none'}`,
        { path: `^${root}/${layer}/` },
        { path: `^${root}/(${layers.slice(index + 1).join('|')})/` },
      ),
    );

module.exports = {
  forbidden: [
    ...upwardIn('engine', LAYERS),
    ...upwardIn('api', API_LAYERS),
    rule('no-circular', 'no circle between files', {}, { circular: true }),
    rule(
      'engine-knows-no-outside',
      'engine/ imports nothing from api/, operations/ or bin/',
      { path: '^engine/' },
      { path: '^(api|operations|bin)/' },
    ),
    rule(
      'engine-only-in-folders',
      'every module of engine/ lives in a folder that names one concept',
      { path: '^engine/[^/]+$' },
      {},
    ),
    rule(
      'faces-between-folders',
      "a folder of engine/ reaches another only through that folder's face (index.ts)",
      { path: '^engine/([^/]+)/' },
      { path: '^engine/', pathNot: ['^engine/$1/', '^engine/[^/]+/index\\.ts$'] },
    ),
    rule(
      'faces-from-outside',
      "api/, operations/ and bin/ reach engine/ only through its folders' faces (index.ts; the SQL adapter's is store/sql's)",
      { path: '^(api|operations|bin)/' },
      { path: '^engine/', pathNot: ['^engine/[^/]+/index\\.ts$', '^engine/store/sql/index\\.ts$'] },
    ),
    rule(
      'api-faces-between-folders',
      "a folder of api/ reaches another only through that folder's face (index.ts)",
      { path: '^api/([^/]+)/' },
      { path: '^api/[^/]+/', pathNot: ['^api/$1/', '^api/[^/]+/index\\.ts$'] },
    ),
    rule(
      'api-root-only-app-and-context',
      "api/'s root holds only the app and its context; the rest lives in a folder per concept",
      { path: '^api/[^/]+$', pathNot: '^api/(app|context)\\.ts$' },
      {},
    ),
    rule(
      'a-route-imports-no-route',
      'a route module imports no other route: what several share lives in api/route-kit',
      { path: '^api/routes/([^/]+)\\.ts$', pathNot: '^api/routes/index\\.ts$' },
      { path: '^api/routes/', pathNot: '^api/routes/$1\\.ts$' },
    ),
    rule(
      'only-bin-opens-the-sql-adapter',
      "api/ and operations/ reach the store through its port (engine/store's face), never its SQL adapter",
      { path: '^(api|operations)/' },
      { path: '^engine/store/sql/' },
    ),
    rule(
      'api-knows-no-bin',
      'api/ imports nothing from bin/: bin/ composes processes from api/, not the reverse',
      { path: '^api/' },
      { path: '^bin/' },
    ),
    rule(
      'vendors-only-in-the-sql-adapter',
      "no SQL driver, HTTP framework or vendor SDK inside engine/ outside the store's SQL adapter",
      { path: '^engine/', pathNot: '^engine/store/sql/' },
      { path: 'node_modules/(pg|pg-[^/]+|@electric-sql/[^/]+|express|body-parser|mongoose|@shopify/[^/]+)/' },
    ),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
