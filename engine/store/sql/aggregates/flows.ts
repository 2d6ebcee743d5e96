import { ConflictError, NotFoundError, type FlowDocument } from '../../../model/index.ts';
import type { PageRequest, FlowStore } from '../../port.ts';
import type { SqlDriver } from '../driver.ts';
import { json, UUID, isUuid, decodeCursor, page, isUniqueViolation } from './rows.ts';
import { toFlow, toVersion } from './row-mappers.ts';

/** Editable flows and their published versions. */
export class SqlFlows implements FlowStore {
  constructor(private readonly db: SqlDriver) {}

  async createFlow(tenantId: string, flow: { id: string; key: string; name: string; draft: FlowDocument }) {
    try {
      const [row] = await this.db.query(
        'insert into flows (tenant_id, id, key, name, draft) values ($1, $2, $3, $4, $5::jsonb) returning *',
        [tenantId, flow.id, flow.key, flow.name, json(flow.draft)],
      );
      return toFlow(row);
    } catch (error) {
      if (isUniqueViolation(error)) throw new ConflictError(`a flow with key "${flow.key}" exists already`);
      throw error;
    }
  }

  async getFlow(tenantId: string, id: string) {
    if (!isUuid(id)) return undefined;
    const [row] = await this.db.query('select * from flows where tenant_id = $1 and id = $2', [tenantId, id]);
    return row ? toFlow(row) : undefined;
  }

  async findFlowByKey(tenantId: string, key: string) {
    const [row] = await this.db.query('select * from flows where tenant_id = $1 and key = $2', [tenantId, key]);
    return row ? toFlow(row) : undefined;
  }

  async listFlows(tenantId: string, filter: { published?: boolean }, request: PageRequest) {
    const rows = await this.db.query(
      `select * from flows where tenant_id = $1 and ($2::uuid is null or id > $2::uuid)
         and ($3::boolean is null or (latest_version is not null) = $3) order by id limit $4`,
      [tenantId, decodeCursor(request.after, UUID), filter.published ?? null, request.first + 1],
    );
    return page(rows, request, toFlow, (r) => r.id);
  }

  async replaceDraft(tenantId: string, id: string, expectedRevision: number, draft: FlowDocument) {
    if (!isUuid(id)) throw new NotFoundError(`no flow ${id}`);
    const [row] = await this.db.query(
      `update flows set draft = $4::jsonb, name = $5, revision = revision + 1, updated_at = now()
        where tenant_id = $1 and id = $2 and revision = $3 and key = $6 returning *`,
      [tenantId, id, expectedRevision, json(draft), draft.name, draft.key],
    );
    if (row) return toFlow(row);
    throw await this.missingOrStale(tenantId, id, expectedRevision, draft.key);
  }

  private async missingOrStale(tenantId: string, id: string, expectedRevision: number, key?: string) {
    const current = await this.getFlow(tenantId, id);
    if (!current) return new NotFoundError(`no flow ${id}`);
    if (key !== undefined && key !== current.key)
      return new ConflictError(`the key of flow ${id} is "${current.key}" and cannot change`);
    return new ConflictError(
      `the flow is at revision ${current.revision}, not ${expectedRevision}: read it again and reapply your change`,
    );
  }

  async deleteFlow(tenantId: string, id: string) {
    if (!isUuid(id)) return false;
    const rows = await this.db.query('delete from flows where tenant_id = $1 and id = $2 returning id', [tenantId, id]);
    return rows.length > 0;
  }

  async publishFlow(tenantId: string, id: string, expectedRevision: number | undefined, document: FlowDocument) {
    if (!isUuid(id)) throw new NotFoundError(`no flow ${id}`);
    const version = await this.db.transaction(async (tx) => {
      const [flow] = await tx.query(
        `update flows set latest_version = coalesce(latest_version, 0) + 1, active_version =
          coalesce(latest_version, 0) + 1,
                active = true, updated_at = now()
          where tenant_id = $1 and id = $2 and ($3::integer is null or revision = $3) returning latest_version`,
        [tenantId, id, expectedRevision ?? null],
      );
      if (!flow) return undefined;
      const [row] = await tx.query(
        'insert into flow_versions (tenant_id, flow_id, version, document) values ($1, $2, $3, $4::jsonb) returning *',
        [tenantId, id, flow.latest_version, json(document)],
      );
      return toVersion(row);
    });
    // Diagnosed after the transaction: PGlite runs one statement at a time and would wait on itself.
    if (!version) throw await this.missingOrStale(tenantId, id, expectedRevision ?? 0);
    return version;
  }

  async setFlowActive(tenantId: string, id: string, active: boolean) {
    if (!isUuid(id)) throw new NotFoundError(`no flow ${id}`);
    const [row] = await this.db.query(
      'update flows set active = $3, updated_at = now() where tenant_id = $1 and id = $2 and active_version is not ' +
        'null returning *',
      [tenantId, id, active],
    );
    if (row) return toFlow(row);
    if (await this.getFlow(tenantId, id))
      throw new ConflictError('the flow has no published version yet: publish it first');
    throw new NotFoundError(`no flow ${id}`);
  }

  async getFlowVersion(tenantId: string, flowId: string, version: number) {
    if (!isUuid(flowId)) return undefined;
    const [row] = await this.db.query(
      'select * from flow_versions where tenant_id = $1 and flow_id = $2 and version = $3',
      [tenantId, flowId, version],
    );
    return row ? toVersion(row) : undefined;
  }

  async listFlowVersions(tenantId: string, flowId: string, request: PageRequest) {
    if (!isUuid(flowId)) return { nodes: [], pageInfo: { hasNextPage: false, endCursor: null } };
    const after = decodeCursor(request.after, /^\d{1,9}$/);
    const rows = await this.db.query(
      `select * from flow_versions where tenant_id = $1 and flow_id = $2 and ($3::integer is null
        or version < $3::integer)
        order by version desc limit $4`,
      [tenantId, flowId, after === null ? null : Number(after), request.first + 1],
    );
    return page(rows, request, toVersion, (r) => String(r.version));
  }
}
