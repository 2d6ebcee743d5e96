/** Tenants' JSONata expressions and templates, and the sandbox that bounds them. */
export { type Bindings, BOUND_NAMES, describeSyntaxError, DOCUMENT, Expression, TENANT, truthy } from './expression.ts';
export { unknownFunction } from './expression-reads.ts';
export { ExpressionSandbox } from './sandbox.ts';
export {
  emptyReferences,
  mergeReferences,
  type NameRead,
  type References,
  type Template,
  TemplateCompiler,
} from './template.ts';
