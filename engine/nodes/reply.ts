import type { FromSchema } from 'json-schema-to-ts';
import { SchemaValidator } from '../model/index.ts';
import { inLoopErrors, staticConfigErrors } from './checks.ts';
import type { Template } from '../expressions/index.ts';
import type { CompiledNode, NodeDocument, NodeKind, NodeScope } from './node-kind.ts';

/** What authors write as a reply node's `operation`. */
export const REPLY = 'reply';

/** Headers a reply may set: what describes a body or a result, and the sender's own `x-` headers. */
const REPLY_HEADERS = ['content-type', 'cache-control', 'location', 'etag', 'last-modified', 'retry-after', 'link'];
const anyCase = (name: string) => name.replace(/[a-z]/g, (letter) => `[${letter}${letter.toUpperCase()}]`);
const headerValue = { type: 'string', maxLength: 1000, pattern: '^[^\\r\\n]*$' } as const;

export const replyConfigSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    status: { type: 'integer', minimum: 200, maximum: 599, default: 200, description: 'The HTTP status.' },
    headers: {
      type: 'object',
      maxProperties: 20,
      // A redirect goes to an http(s) URL or a relative one, never to `javascript:` or `data:`.
      patternProperties: {
        '^[Ll][Oo][Cc][Aa][Tt][Ii][Oo][Nn]$': {
          ...headerValue,
          pattern: '^(?:[Hh][Tt][Tt][Pp][Ss]?://[^\\r\\n]*|[^:/?#\\r\\n]*(?:[/?#][^\\r\\n]*)?)$',
          description: 'An http(s) URL or a relative one.',
        },
      },
      additionalProperties: headerValue,
      propertyNames: { pattern: `^(${REPLY_HEADERS.map(anyCase).join('|')}|[Xx]-[A-Za-z0-9-]{1,60})$` },
      default: {},
      description: `${REPLY_HEADERS.join(', ')} and x- headers.`,
    },
    body: { description: 'Sent as JSON, or as it is when it is text and a content-type is set.' },
  },
} as const;

export type Reply = FromSchema<typeof replyConfigSchema>;

export interface ReplySpec {
  config: Template;
}

const configValidator = new SchemaValidator<Reply>(replyConfigSchema, 'reply config');

/**
 * A webhook reply: the flow URL that received the run's message answers with this node's status,
 * headers and body instead of 202, if the reply comes within REPLY_WAIT_MS. The reply is the
 * node's output, checkpointed at once; the run goes on after it.
 */
export const replyKind: NodeKind<ReplySpec> = {
  name: REPLY,
  answersDelivery: true,
  reference: {
    title: 'Reply to the webhook',
    description:
      'The flow URL answers the delivery that started the run with this status, headers and body instead of 202, ' +
      'when the run reaches this node within REPLY_WAIT_MS (10 s unless the operator sets it); later, the sender ' +
      'has had its 202 and the reply is only recorded. The run goes on after it. The message is stored before ' +
      'anything runs, as for every delivery. A reply is served with `X-Content-Type-Options: nosniff` and a ' +
      "sandboxing `Content-Security-Policy` (it is the tenant's content, not the API's); a 204 or 304 has no " +
      'body; `Location` is an http(s) URL or a relative one. Output: the reply.',
    configSchema: replyConfigSchema,
    sideEffects: true,
  },
  claims: (node) => node.operation === REPLY,
  compile: compileReply,
  checkGraph: repliesInLoops,
  // Checkpointed at once: the waiting flow URL reads it from the run.
  hasSideEffects: () => true,
  runner: () => ({
    run: async (node, call) => {
      const config = await node.spec.config.evaluate(call.scope.bindings);
      return configValidator.validate(config, `$.nodes.${node.id}.config`);
    },
  }),
};

function compileReply(node: NodeDocument, scope: NodeScope): ReplySpec {
  const config = node.config ?? {};
  const path = `${scope.path}.config`;
  const template = scope.templates.compile(config, path);
  scope.errors.push(...staticConfigErrors(configValidator, config, scope.templates.dynamic.keys(), path, node.id));
  return { config: template };
}

/** A loop's items would each answer the one delivery: a reply stays at the top of a flow. */
function repliesInLoops(nodes: ReadonlyMap<string, CompiledNode>, documents: readonly NodeDocument[], at: string) {
  return inLoopErrors(replyKind, 'a reply cannot be inside a loop', nodes, documents, at);
}
