// `npm run docs:config`: rewrites the settings table of docs/configuration.md from bin/config/.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { withSettingsTable } from './config/config.ts';

const file = path.resolve(import.meta.dirname, '../docs/configuration.md');
writeFileSync(file, withSettingsTable(readFileSync(file, 'utf8')));
