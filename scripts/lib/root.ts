import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The clone's root folder, wherever the process was started from. */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
