import { filter } from './filter.ts';
import { httpRequest } from './http-request.ts';
import { transform } from './transform.ts';

export const coreOperations = [transform, filter, httpRequest];
