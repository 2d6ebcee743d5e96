#!/usr/bin/env node
// The CLI is TypeScript run through tsx's loader: no build step between a checkout and `npm start`.
import { register } from 'tsx/esm/api';

register();
await import('./main.ts');
