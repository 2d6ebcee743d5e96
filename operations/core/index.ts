import { filter } from './filter.ts';
import { httpRequest } from './http-request.ts';
import { log } from './log.ts';
import { transform } from './transform.ts';

export const coreOperations = [transform, filter, httpRequest, log];
