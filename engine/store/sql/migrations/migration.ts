/** One change of the schema, applied once, in order of version (migrate). */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}
