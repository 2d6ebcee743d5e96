/**
 * `/docs`: the API reference as one self-contained HTML page, rendered once from the OpenAPI
 * document the server publishes (no scripts, no outside assets).
 */
type OpenApi = {
  info: { title: string; version: string; description?: string };
  tags: Array<{ name: string; description: string }>;
  paths: Record<string, Record<string, Operation>>;
};
type Operation = {
  tags?: string[]; summary?: string; description?: string; deprecated?: boolean;
  security?: Array<Record<string, string[]>>;
  parameters?: Array<{ name: string; in: string; required?: boolean; description?: string; schema?: unknown }>;
  requestBody?: { content?: Record<string, { schema?: unknown }> };
  responses?: Record<string, { description?: string }>;
};

const escape = (text: unknown) => String(text ?? '').replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
const code = (value: unknown) => `<pre>${escape(JSON.stringify(value, null, 2))}</pre>`;

function operationHtml(method: string, path: string, operation: Operation): string {
  const scope = operation.security?.[0]?.oauth2?.[0];
  const parameters = (operation.parameters ?? []).map((parameter) =>
    `<tr><td><code>${escape(parameter.name)}</code></td><td>${escape(parameter.in)}</td><td>${parameter.required ? 'required' : ''}</td><td><code>${escape(JSON.stringify(parameter.schema))}</code> ${escape(parameter.description)}</td></tr>`).join('');
  const body = operation.requestBody?.content && Object.values(operation.requestBody.content)[0]?.schema;
  const responses = Object.entries(operation.responses ?? {}).map(([status, response]) => `<li><b>${escape(status)}</b> ${escape(response.description)}</li>`).join('');
  return `<section class="op" id="${escape(`${method}-${path}`)}">
<h3><span class="method ${escape(method)}">${escape(method.toUpperCase())}</span> <code>${escape(path)}</code>${operation.deprecated ? ' <em>deprecated</em>' : ''}</h3>
<p>${escape(operation.summary)}${scope ? ` — scope <code>${escape(scope)}</code>` : ''}</p>
${operation.description ? `<p>${escape(operation.description)}</p>` : ''}
${parameters ? `<table><tr><th>parameter</th><th>in</th><th></th><th>schema</th></tr>${parameters}</table>` : ''}
${body ? `<details><summary>request body</summary>${code(body)}</details>` : ''}
<ul>${responses}</ul>
</section>`;
}

export function renderDocs(document: Record<string, unknown>): string {
  const openapi = document as unknown as OpenApi;
  const byTag = new Map<string, string[]>();
  for (const [path, methods] of Object.entries(openapi.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      const tag = operation.tags?.[0] ?? 'Other';
      byTag.set(tag, [...(byTag.get(tag) ?? []), operationHtml(method, path, operation)]);
    }
  }
  const sections = openapi.tags.filter((tag) => byTag.has(tag.name)).map((tag) =>
    `<h2 id="${escape(tag.name)}">${escape(tag.name)} <small>${escape(tag.description)}</small></h2>${byTag.get(tag.name)!.join('\n')}`);
  const contents = openapi.tags.map((tag) => byTag.has(tag.name)
    ? `<li><a href="#${escape(tag.name)}">${escape(tag.name)}</a> — ${escape(tag.description)}</li>`
    : `<li>${escape(tag.name)} — ${escape(tag.description)} <em>(no routes yet)</em></li>`).join('');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(openapi.info.title)} ${escape(openapi.info.version)}</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;color:#222}code,pre{font:13px ui-monospace,monospace}
pre{background:#f6f6f6;padding:.5rem;overflow:auto}.op{border-top:1px solid #ddd;padding:.5rem 0}.method{padding:0 .4rem;border-radius:3px;color:#fff;background:#555}
.get{background:#2a7}.post{background:#27a}.put{background:#a72}.delete{background:#a33}table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:.2rem .4rem;text-align:left}</style></head>
<body><h1>${escape(openapi.info.title)} <small>${escape(openapi.info.version)}</small></h1><p>${escape(openapi.info.description)}</p>
<p>Machine-readable: <a href="/openapi.json">/openapi.json</a>.</p><ul>${contents}</ul>${sections.join('\n')}</body></html>`;
}
