/**
 * The layering of engine/ (docs/architecture.md), checked by `npm test`. Its folders, bottom to top:
 * a folder imports only folders below it, and only through their faces (index.ts).
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
  'queue',
  'alerts',
  'intake',
  'services',
];

const upward = LAYERS.slice(0, -1).map((layer, index) => ({
  name: `${layer}-imports-only-below`,
  comment: `engine/${layer} may import only the folders below it: ${LAYERS.slice(0, index).join(', ') || 'none'}`,
  severity: 'error',
  from: { path: `^engine/${layer}/` },
  to: { path: `^engine/(${LAYERS.slice(index + 1).join('|')})/` },
}));

module.exports = {
  forbidden: [
    ...upward,
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
