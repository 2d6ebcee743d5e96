import { compileFlow, type CompileOptions } from '../flow/index.ts';
import { NotFoundError, rerooted } from '../model/index.ts';
import type { TestRequest, TestResult, TestRunner } from '../runtime/index.ts';
import type { FlowService } from './flow-service.ts';

/**
 * A flow tried before it is published: its draft, or a document given instead, run once with sample input (or one
 * node of it), recording nothing.
 */
export class TestRunService {
  constructor(
    private readonly flows: FlowService,
    private readonly compile: CompileOptions,
    private readonly runner: TestRunner,
  ) {}

  /** Field errors name a given document's fields from `$.document`, the stored draft's from `$.draft`. */
  async run(tenantId: string, flowId: string, request: TestRequest & { document?: unknown }): Promise<TestResult> {
    const flow = await this.flows.get(tenantId, flowId);
    const { document, ...test } = request;
    const compiled = this.compiled(document ?? flow.draft, document ? '$.document' : '$.draft');
    if (test.node !== undefined && !compiled.graph.nodes.some((node) => node.id === test.node))
      throw new NotFoundError(`the flow has no node ${test.node}`);
    return this.runner.run(tenantId, flow.id, compiled, test);
  }

  private compiled(document: unknown, at: string) {
    try {
      return compileFlow(document, this.compile);
    } catch (error) {
      throw rerooted(error, at);
    }
  }
}
