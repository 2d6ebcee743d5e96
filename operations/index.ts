import { familyParts, type OperationFamily } from '../engine/plugins/index.ts';
import { coreFamily } from './core/index.ts';
import { dataSpaceFamily } from './dataspace/index.ts';
import { shopifyFamily } from './shopify/index.ts';

/** Every operation family this build ships: a new one is a folder with its `defineFamily`, and a line here. */
export const families: OperationFamily[] = [coreFamily, dataSpaceFamily, shopifyFamily];

/** What they bring, gathered: their operations, webhook signatures, destination types and subscribers. */
export const { operations: allOperations, webhookSignatures } = familyParts(families);
