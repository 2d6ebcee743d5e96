import { defineFamily } from '../../engine/plugins/index.ts';
import { filter } from './filter.ts';
import { httpRequest } from './http-request.ts';
import { log } from './log.ts';
import { transform } from './transform.ts';

/** What every flow may use: transform, filter, an HTTP request, a log line. */
export const coreFamily = defineFamily({ name: 'core', operations: [transform, filter, httpRequest, log] });
