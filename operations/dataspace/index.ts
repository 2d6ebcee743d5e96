import { defineFamily } from '../../engine/plugins/index.ts';
import { dataSpacePut } from './put.ts';

/** Data spaces written from a flow (`$document` reads them). */
export const dataSpaceFamily = defineFamily({ name: 'dataspace', operations: [dataSpacePut] });
