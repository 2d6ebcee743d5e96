import { dataSpacePut } from './put.ts';

export const dataSpaceOperations = [dataSpacePut];
