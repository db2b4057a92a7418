/** The k6 scripts are not in the root tsconfig (k6 strips types and checks nothing); check them here. */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './run.js';

describe('k6 scripts', () => {
  it('typecheck against @types/k6', () => {
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    expect(() => execFileSync(process.execPath, [tsc, '-p', join(ROOT, 'loadtests', 'tsconfig.json')], { encoding: 'utf8', stdio: 'pipe' })).not.toThrow();
  }, 120_000);
});
