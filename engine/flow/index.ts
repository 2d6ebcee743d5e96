/** Compiling a flow document: the checks at publish and the compiled flow. */
export {
  type CompiledFlow,
  compileFlow,
  type CompileOptions,
  pinOperationVersions,
  validateFlow,
} from './compile.ts';
