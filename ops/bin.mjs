#!/usr/bin/env node
// `npx es-lease-locks`: runs the TypeScript entry (ops/cli.ts) with the repository's tsx, in this process, so the exit code is the CLI's.
import { register } from 'tsx/esm/api';

register();
await import('./cli.ts');
