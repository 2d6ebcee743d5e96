/** Tenants' JSONata expressions and templates, and the sandbox that bounds them. */
export { type Bindings, describeSyntaxError, Expression, TENANT, truthy } from './expression.ts';
export { ExpressionSandbox } from './sandbox.ts';
export {
  emptyReferences,
  mergeReferences,
  type NameRead,
  type References,
  type Template,
  TemplateCompiler,
} from './template.ts';
