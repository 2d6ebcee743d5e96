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

/** api/'s folders, bottom to top; at its root only the app, its context and the adapter route. */
const API_LAYERS = ['http', 'auth', 'route-kit', 'openapi', 'flow-url', 'routes', 'pages'];

/** In `root`, each folder of `layers` imports none above it. */
const upwardIn = (root, layers) =>
  layers.slice(0, -1).map((layer, index) => ({
    name: `${root}-${layer}-imports-only-below`,
    comment: `${root}/${layer} may import only the folders below it: ${layers.slice(0, index).join(', ') || 'none'}`,
    severity: 'error',
    from: { path: `^${root}/${layer}/` },
    to: { path: `^${root}/(${layers.slice(index + 1).join('|')})/` },
  }));

module.exports = {
  forbidden: [
    ...upwardIn('engine', LAYERS),
    ...upwardIn('api', API_LAYERS),
    {
      name: 'no-circular',
      comment: 'no circle between files',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'engine-knows-no-outside',
      comment: 'engine/ imports nothing from api/, operations/ or bin/',
      severity: 'error',
      from: { path: '^engine/' },
      to: { path: '^(api|operations|bin)/' },
    },
    {
      name: 'engine-only-in-folders',
      comment: 'every module of engine/ lives in a folder that names one concept',
      severity: 'error',
      from: { path: '^engine/[^/]+$' },
      to: {},
    },
    {
      name: 'faces-between-folders',
      comment: "a folder of engine/ reaches another only through that folder's face (index.ts)",
      severity: 'error',
      from: { path: '^engine/([^/]+)/' },
      to: { path: '^engine/', pathNot: ['^engine/$1/', '^engine/[^/]+/index\\.ts$'] },
    },
    {
      name: 'faces-from-outside',
      comment: "api/, operations/ and bin/ reach engine/ only through its folders' faces (index.ts)",
      severity: 'error',
      from: { path: '^(api|operations|bin)/' },
      to: { path: '^engine/', pathNot: '^engine/[^/]+/index\\.ts$' },
    },
    {
      name: 'api-faces-between-folders',
      comment: "a folder of api/ reaches another only through that folder's face (index.ts)",
      severity: 'error',
      from: { path: '^api/([^/]+)/' },
      to: { path: '^api/[^/]+/', pathNot: ['^api/$1/', '^api/[^/]+/index\\.ts$'] },
    },
    {
      name: 'api-root-only-app-context-adapter',
      comment: "api/'s root holds only the app, its context and the adapter route; the rest lives in a folder per concept",
      severity: 'error',
      from: { path: '^api/[^/]+$', pathNot: '^api/(app|context|adapter)\\.ts$' },
      to: {},
    },
    {
      name: 'a-route-imports-no-route',
      comment: 'a route module imports no other route: what several share lives in api/route-kit',
      severity: 'error',
      from: { path: '^api/routes/([^/]+)\\.ts$', pathNot: '^api/routes/index\\.ts$' },
      to: { path: '^api/routes/', pathNot: '^api/routes/$1\\.ts$' },
    },
    {
      name: 'api-knows-no-sql',
      comment: "api/ reaches the store through its port (engine/store's face), never its SQL adapter",
      severity: 'error',
      from: { path: '^api/' },
      to: { path: '^engine/store/sql/' },
    },
    {
      name: 'api-knows-no-bin',
      comment: 'api/ imports nothing from bin/: bin/ composes processes from api/, not the reverse',
      severity: 'error',
      from: { path: '^api/' },
      to: { path: '^bin/' },
    },
    {
      name: 'vendors-only-in-the-sql-adapter',
      comment: 'no SQL driver, HTTP framework or vendor SDK inside engine/ outside the store\'s SQL adapter',
      severity: 'error',
      from: { path: '^engine/', pathNot: '^engine/store/sql/' },
      to: { path: 'node_modules/(pg|pg-[^/]+|@electric-sql/[^/]+|express|body-parser|mongoose|@shopify/[^/]+)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
