/** npx es-lease-locks <command> ... / npm run locks -- <command> ...: the operator's CLI (usage.ts). */
import { runOps } from './main.js';

process.exitCode = await runOps(process.argv.slice(2));
