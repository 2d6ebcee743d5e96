/** Compiling a flow document: the checks at publish and the compiled flow. */
export {
  type CompiledFlow,
  compileFlow,
  type CompileOptions,
  pinOperationVersions,
  reviewFlow,
  validateFlow,
} from './compile.ts';
export type { VariableRead } from './graph-compiler.ts';
export { type CompiledFlowControl, keysOf, MAX_KEY_LENGTH, type MessageKeys, messageKeys } from './flow-control.ts';
export { missingValueWarnings, type NamesByKind } from './value-warnings.ts';
