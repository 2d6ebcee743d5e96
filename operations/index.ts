import type { OperationDefinition } from '../engine/operations.ts';
import { coreOperations } from './core/index.ts';
import { shopifyOperations } from './shopify/index.ts';

/** Every operation family this build ships. */
export const allOperations: OperationDefinition<any>[] = [...coreOperations, ...shopifyOperations];
