import type { FlowDocument } from '../../engine/model/index.ts';
import { escapeHtml } from './html.ts';

/** A node of the flow document, as the page shows it. */
export type NodeDoc = FlowDocument['nodes'][number];

/** What became of a node: its step's status, and for a loop, what its items say at a glance when some failed. */
export interface Shown {
  status: string;
  items?: string;
}

/** The colour of each status, on badges and in the graph. */
export const STATUS_COLORS: Record<string, string> = {
  succeeded: '#2e7d32',
  // Not the green of success: the run went on past a failure.
  handled: '#a15c00',
  failed: '#c62828',
  waiting: '#ef6c00',
  running: '#1565c0',
  queued: '#1565c0',
  held: '#6d4c41',
  filtered: '#616161',
  skipped: '#616161',
  cancelled: '#616161',
  debounced: '#616161',
  'not run': '#9e9e9e',
};

const BOX = { width: 170, height: 54, gapX: 60, gapY: 24, margin: 16 };

/**
 * The flow as a graph, `across` (left to right) or `down` (top to bottom, for a narrow screen): the trigger, then
 * each node a step after its furthest predecessor, coloured by what became of it; a node links to its details.
 * Error paths are dashed.
 */
export function graphSvg(
  nodes: NodeDoc[],
  edges: FlowDocument['edges'],
  shownOf: (node: NodeDoc) => Shown,
  direction: 'across' | 'down',
): string {
  const column = new Map<string, number>([['trigger', 0]]);
  // Longest path from the trigger: as many relaxations as there are nodes settle any acyclic graph.
  for (let round = 0; round <= nodes.length; round++)
    for (const edge of edges) {
      const from = column.get(edge.from);
      if (from !== undefined && (column.get(edge.to) ?? -1) < from + 1) column.set(edge.to, from + 1);
    }
  for (const node of nodes) if (!column.has(node.id)) column.set(node.id, 1);
  // Each node's step (its column across, its row down) and its place among the nodes of that step.
  const across = direction === 'across';
  const pitch = across
    ? { x: BOX.width + BOX.gapX, y: BOX.height + BOX.gapY }
    : { x: BOX.width + BOX.gapY, y: BOX.height + BOX.gapY * 1.5 };
  const places = new Map<number, number>();
  const position = new Map<string, { x: number; y: number }>();
  for (const id of ['trigger', ...nodes.map((node) => node.id)]) {
    const step = column.get(id)!;
    const place = places.get(step) ?? 0;
    places.set(step, place + 1);
    const [x, y] = across ? [step, place] : [place, step];
    position.set(id, { x: BOX.margin + x * pitch.x, y: BOX.margin + y * pitch.y });
  }
  const steps = Math.max(...places.keys()) + 1;
  const most = Math.max(...places.values());
  const [columns, rows] = across ? [steps, most] : [most, steps];
  const width = BOX.margin * 2 + (columns - 1) * pitch.x + BOX.width;
  const height = BOX.margin * 2 + (rows - 1) * pitch.y + BOX.height;
  const lines = edges
    .map((edge) => {
      const from = position.get(edge.from);
      const to = position.get(edge.to);
      if (!from || !to) return '';
      const onError = (edge as { on?: string }).on === 'error';
      // Across: from the right side to the left side; down: from the bottom to the top.
      const [x1, y1, x2, y2] = across
        ? [from.x + BOX.width, from.y + BOX.height / 2, to.x, to.y + BOX.height / 2]
        : [from.x + BOX.width / 2, from.y + BOX.height, to.x + BOX.width / 2, to.y];
      const bend = across ? [BOX.gapX / 2, 0] : [0, BOX.gapY * 0.75];
      return `<path d="M${x1} ${y1} C${x1 + bend[0]} ${y1 + bend[1]} ${x2 - bend[0]} ${y2 - bend[1]} ${x2} ${y2}" fill="none" stroke="${onError ? '#c62828' : '#888'}" stroke-width="1.5"${onError ? ' stroke-dasharray="5 4"' : ''} marker-end="url(#arrow)"/>`;
    })
    .join('');
  const box = (id: string, label: string, sub: string, { status, items }: Shown) => {
    const { x, y } = position.get(id)!;
    const color = STATUS_COLORS[items ? 'handled' : status] ?? '#616161';
    const shape = `<rect x="${x}" y="${y}" width="${BOX.width}" height="${BOX.height}" rx="6" fill="#fff" stroke="${color}" stroke-width="${status === 'not run' ? 1 : 3}"${status === 'not run' ? ' stroke-dasharray="4 3"' : ''}/>
<text x="${x + 10}" y="${y + 22}" font-weight="600">${escapeHtml(clip(label))}</text>
<text x="${x + 10}" y="${y + 42}" fill="${color}" font-size="12">${escapeHtml(clip(sub))}</text>`;
    return id === 'trigger'
      ? shape
      : `<a href="#node-${escapeHtml(id)}"><title>${escapeHtml(`${label}: ${status}${items ? `, ${items}` : ''}`)}</title>${shape}</a>`;
  };
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" font-family="system-ui,sans-serif" font-size="14" role="img" aria-label="The flow's nodes and what became of each">
<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0 0L10 5L0 10z" fill="#888"/></marker></defs>
${lines}${box('trigger', 'trigger', 'received', { status: 'succeeded' })}${nodes
  .map((node) => {
    const shown = shownOf(node);
    // The status first: a long operation's name is what a narrow box cuts.
    return box(node.id, node.id, `${shown.items ? 'items failed' : shown.status} · ${node.operation}`, shown);
  })
  .join('')}</svg>`;
}

const clip = (text: string) => (text.length > 22 ? `${text.slice(0, 21)}…` : text);
