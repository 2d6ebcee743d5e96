import { majorOf } from '../../engine/plugins/index.ts';
import type { OperationInfo } from '../../engine/model/index.ts';
import type { WebhookSignature } from '../../engine/triggers/index.ts';
import type { namedKinds } from '../../engine/nodes/index.ts';
import { escapeHtml as html } from './html.ts';
import { nameCell, notes, prose, type Schema, schemaAnchor, schemaHtml, tableRow, typeLabel } from './schema-html.ts';
import { problemCatalog } from '../http/index.ts';

type NamedNodeKind = ReturnType<typeof namedKinds>[number];

/**
 * `/docs`: the API reference as one self-contained HTML page, rendered once from the OpenAPI
 * document the server publishes (no outside assets; one small script searches and opens sections):
 * every route with its parameters, request body, example and answers, and every schema with its fields,
 * linked where one names another. Each route and schema folds, so the page is a list to search.
 */
type Content = Record<string, { schema?: Schema; example?: unknown }>;
type OpenApi = {
  info: { title: string; version: string; description?: string };
  tags: Array<{ name: string; description: string }>;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
};
type Operation = {
  tags?: string[];
  summary?: string;
  description?: string;
  deprecated?: boolean;
  security?: Array<Record<string, string[]>>;
  parameters?: Array<{ name: string; in: string; required?: boolean; description?: string; schema?: Schema }>;
  requestBody?: { content?: Content };
  responses?: Record<string, { description?: string; content?: Content }>;
};

const contentSchema = (content: Content | undefined) => (content ? Object.values(content)[0]?.schema : undefined);

function operationHtml(method: string, path: string, operation: Operation): string {
  const scope = operation.security?.[0]?.oauth2?.[0];
  const parameters = (operation.parameters ?? [])
    .map((parameter) =>
      tableRow(
        nameCell(parameter.name, parameter.required),
        html(parameter.in),
        typeLabel(parameter.schema ?? {}),
        notes({ ...parameter.schema, description: parameter.description ?? parameter.schema?.description }),
      ),
    )
    .join('');
  const body = contentSchema(operation.requestBody?.content);
  const example = Object.values(operation.requestBody?.content ?? {})[0]?.example;
  const responses = Object.entries(operation.responses ?? {})
    .map(([status, response]) => {
      const schema = contentSchema(response.content);
      return `<li><b>${html(status)}</b> ${prose(response.description)}${schema ? schemaHtml(schema) : ''}</li>`;
    })
    .join('');
  return `<details class="op" id="${html(`${method}-${path}`)}"><summary>
<h3><span class="method ${html(method)}">${html(method.toUpperCase())}</span>
<code>${html(path)}</code>${operation.deprecated ? ' <em>deprecated</em>' : ''}</h3>
<span>${prose(operation.summary)}${scope ? ` — scope <code>${html(scope)}</code>` : ''}</span></summary>
${operation.description ? `<p>${prose(operation.description)}</p>` : ''}
${parameters ? `<div class="wide"><table><tr><th>parameter</th><th>in</th><th>type</th><th></th></tr>${parameters}</table></div>` : ''}
${body ? `<h4>Request body</h4>${example === undefined ? '' : `<pre class="example">${html(JSON.stringify(example, null, 2))}</pre>`}${schemaHtml(body)}` : ''}
<h4>Answers</h4><ul>${responses}</ul>
</details>`;
}

/** One operation a node can run: what it does, its config, whether it changes an outside system. */
function operationReference(operation: OperationInfo): string {
  const major = majorOf(operation.version);
  const successor = operation.successor
    ? `: use <a href="#${html(operationAnchor(operation.successor))}"><code>${html(operation.successor)}</code></a>`
    : '';
  const notes = [
    operation.sideEffects
      ? 'Changes an outside system: a dry run shows what it would send instead.'
      : 'No side effects.',
    operation.fanOut ? 'Fans out: its items become a batch of tasks that run the nodes after it.' : '',
    operation.deprecated ? `Deprecated${successor}.` : '',
  ].filter(Boolean);
  return `<details class="schema" id="${html(operationAnchor(operation.name))}"><summary>
<h3><code>${html(operation.name)}</code> — ${html(operation.title)} <small>v${html(operation.version)} (a node pins it
with <code>"operationVersion": ${major}</code>)</small></h3></summary>
<p>${prose(operation.description)}</p><p><small>${notes.join(' ')}</small></p>
<h4>Config</h4>${schemaHtml(operation.configSchema as Schema)}</details>`;
}

const operationAnchor = (name: string) => `operation-${name}`;

/** A kind of node built into the language (a loop): what it does and its config. */
function nodeKindReference(kind: NamedNodeKind): string {
  return `<details class="schema" id="node-${html(kind.name)}"><summary>
<h3><code>${html(kind.name)}</code> — ${html(kind.title)}</h3></summary><p>${prose(kind.description)}</p>
<h4>Config</h4>${schemaHtml(kind.configSchema as Schema)}</details>`;
}

const problemRow = ({ kind, uri, status, summary }: (typeof problemCatalog)[number]) =>
  `<tr id="problem-${html(kind)}"><td><code>${html(uri)}</code></td><td>${status}</td><td>${prose(summary)}</td></tr>`;

const signatureItem = ({ type, description }: WebhookSignature) =>
  `<li id="signature-${html(type)}"><code>${html(type)}</code>: ${prose(description)}</li>`;

/** The page: every route by tag, every operation a node can run, every schema. */
export function renderDocs(
  document: Record<string, unknown>,
  operations: OperationInfo[],
  signatures: WebhookSignature[],
  kinds: NamedNodeKind[],
): string {
  const openapi = document as unknown as OpenApi;
  const byTag = new Map<string, string[]>();
  for (const [path, methods] of Object.entries(openapi.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      const tag = operation.tags?.[0] ?? 'Other';
      byTag.set(tag, [...(byTag.get(tag) ?? []), operationHtml(method, path, operation)]);
    }
  }
  const sections = openapi.tags
    .filter((tag) => byTag.has(tag.name))
    .map(
      (tag) =>
        `<h2 id="${html(tag.name)}">${html(tag.name)} <small>${prose(tag.description)}</small></h2>\n` +
        byTag.get(tag.name)!.join('\n'),
    );
  const contents = openapi.tags
    .map((tag) =>
      byTag.has(tag.name)
        ? `<li><a href="#${html(tag.name)}">${html(tag.name)}</a> — ${prose(tag.description)}</li>`
        : `<li>${html(tag.name)} — ${prose(tag.description)} <em>(no routes yet)</em></li>`,
    )
    .join('');
  const schemas = Object.entries(openapi.components.schemas).map(
    ([name, schema]) =>
      `<details class="schema" id="${html(schemaAnchor(name))}"><summary><h3>${html(name)}</h3></summary>` +
      `${schemaHtml({ ...schema, $ref: undefined })}</details>`,
  );
  return `<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>${html(openapi.info.title)} ${html(openapi.info.version)}</title>
<meta name="viewport" content="width=device-width,initial-scale=1">
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:72rem;margin:0 auto;padding:0 1rem 2rem;color:#222}
code,pre{font:13px ui-monospace,monospace;overflow-wrap:anywhere}
pre{background:#f6f6f6;padding:.5rem;overflow:auto;white-space:pre-wrap}
.op,.schema{border-top:1px solid #ddd;padding:.3rem 0}
summary{cursor:pointer;list-style-position:outside;margin-left:1rem}summary h3{display:inline;margin:0;font-size:1rem}
summary>span{display:block;color:#444}details[open]>summary{margin-bottom:.4rem}
.method{padding:0 .4rem;border-radius:3px;color:#fff;background:#555}
.get{background:#2a7}.post{background:#27a}.put{background:#a72}.delete{background:#a33}
table{border-collapse:collapse;margin:.3rem 0}
td,th{border:1px solid #ddd;padding:.2rem .4rem;text-align:left;vertical-align:top}h4{margin:.6rem 0 .2rem}
td table{font-size:95%}
#find{position:sticky;top:0;background:#fff;padding:.6rem 0;border-bottom:1px solid #ddd;display:flex;gap:.5rem;
flex-wrap:wrap;align-items:center;z-index:1}
#find input{flex:1 1 14rem;font:inherit;padding:.3rem .5rem;min-width:0}#find button{font:inherit}
.hidden{display:none}.wide{overflow-x:auto}details{scroll-margin-top:6rem}
@media (max-width:640px){body{padding:0 .5rem 2rem}table,tbody,tr,td{display:block}th{display:none}
td{border:0;padding:.1rem 0}tr{border-top:1px solid #ddd;padding:.2rem 0}td table,td .wide{margin-left:.6rem}}</style>
<script>
// What a section is found by: its title line, its description and the names of its fields and parameters
// (not its answers, which every route shares).
function findText(section) {
  const names = [...section.querySelectorAll('td:first-child > code')].map((name) => name.textContent);
  const description = section.querySelector(':scope > p');
  return [section.querySelector('summary').textContent, description ? description.textContent : '', ...names]
    .join(' ')
    .toLowerCase();
}
// Search: show the routes, operations and schemas whose text holds every word typed, opened; the rest hide.
function find(query) {
  const words = query.toLowerCase().split(/\\s+/).filter(Boolean);
  let shown = 0;
  const sections = document.querySelectorAll('details.op, details.schema');
  for (const section of sections) {
    const text = findText(section);
    const hit = words.every((word) => text.includes(word));
    section.classList.toggle('hidden', !hit);
    section.open = hit && words.length > 0;
    if (hit) shown++;
  }
  for (const heading of document.querySelectorAll('h2')) {
    let next = heading.nextElementSibling;
    let any = false;
    for (; next && next.tagName !== 'H2'; next = next.nextElementSibling)
      if (!next.classList.contains('hidden') && next.matches('details, ul')) any = true;
    heading.classList.toggle('hidden', words.length > 0 && !any);
  }
  document.getElementById('found').textContent = words.length ? shown + ' of ' + sections.length : '';
  // While searching, the index gives way to the results, and the first is brought into view.
  document.getElementById('contents').classList.toggle('hidden', words.length > 0);
  const first = words.length > 0 && document.querySelector('details.op:not(.hidden), details.schema:not(.hidden)');
  if (first) first.scrollIntoView({ block: 'start' });
  else scrollTo(0, 0);
}
function openAll(open) { for (const section of document.querySelectorAll('details')) section.open = open; }
// A link to a folded route or schema opens it.
function openTarget() {
  const target = location.hash && document.getElementById(decodeURIComponent(location.hash.slice(1)));
  if (target && target.tagName === 'DETAILS') { target.open = true; target.scrollIntoView(); }
}
addEventListener('hashchange', openTarget);
addEventListener('DOMContentLoaded', openTarget);
</script></head>
<body><div id="find"><input type="search" placeholder="Search routes, operations, schemas" aria-label="Search"
oninput="find(this.value)"><span id="found"></span><button type="button" onclick="openAll(true)">Open all</button>
<button type="button" onclick="openAll(false)">Close all</button></div>
<h1>${html(openapi.info.title)}
<small>${html(openapi.info.version)}</small></h1><p>${prose(openapi.info.description)}</p>
<p>Machine-readable: <a href="/openapi.json">/openapi.json</a>. Fields marked <b>*</b> are required. Each route
and schema opens on a click; the search box finds them by any word in them.</p>
<ul id="contents">${contents}
<li><a href="#nodes">Nodes of the language</a> — loops, waits, replies, calls</li>
<li><a href="#operations">Operations</a> — what a flow's nodes can run</li>
<li><a href="#webhook-signatures">Webhook signatures</a> — how vendors sign what they deliver</li>
<li><a href="#problem-types">Problem types</a> — the kinds of error, to branch on</li>
<li><a href="#schemas">Schemas</a> — every resource and document</li></ul>
${sections.join('\n')}
<h2 id="nodes">Nodes of the language <small>what a node's <code>operation</code> names besides operations</small></h2>
${kinds.map(nodeKindReference).join('\n')}
<h2 id="operations">Operations <small>what a node's <code>operation</code> names
(and <code>action:&lt;name&gt;</code>, a tenant action)</small></h2>
${operations.map(operationReference).join('\n')}
<h2 id="webhook-signatures">Webhook signatures <small>what a webhook trigger's <code>verify.type</code> may name,
besides none, header and hmac-sha256</small></h2>
<ul>${signatures.map(signatureItem).join('')}</ul>
<h2 id="problem-types">Problem types <small>every error is a <code>application/problem+json</code> whose
<code>type</code> is one of these</small></h2>
<div class="wide"><table><tr><th>type</th><th>status</th><th>meaning</th></tr>${problemCatalog.map(problemRow).join('')}
</table></div>
<h2 id="schemas">Schemas</h2>${schemas.join('\n')}</body></html>`;
}
