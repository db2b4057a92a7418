/**
 * What each package may import, read from the sources: the client package nothing outside itself
 * but its testing entry's engine (bundled at build), and the engine nothing of the functions, of AWS
 * or of a search client (it decides; stores and handlers talk to the world).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { expect, it } from 'vitest';
import { ROOT } from '../../scripts/stack.js';

function sourcesUnder(folder: string): string[] {
  return readdirSync(join(ROOT, folder), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => join(folder, file));
}

/** Every module a source file imports or re-exports, resolved to a repository path when relative. */
function importsOf(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  return [...text.matchAll(/(?:^|\n)\s*(?:import|export)[^'"]*?from\s*['"]([^'"]+)['"]/g)].map(([, spec]) =>
    spec!.startsWith('.') ? relative(ROOT, resolve(ROOT, file, '..', spec!)) : spec!,
  );
}

it('the client package imports nothing outside itself; only its testing entry imports the engine', () => {
  const crossings = sourcesUnder('packages/client/src').flatMap((file) =>
    importsOf(file)
      .filter(
        (target) =>
          (target.includes('/') && !target.startsWith('@') && !target.startsWith('node:') ? !target.startsWith('packages/client/') : false) ||
          (target.startsWith('@es-lease-locks/engine') && !file.startsWith('packages/client/src/testing/')),
      )
      .map((target) => `${file} -> ${target}`),
  );
  expect(crossings).toEqual([]);
});

it('the engine imports nothing of the functions, of AWS or of a search client', () => {
  const crossings = sourcesUnder('packages/engine/src').flatMap((file) =>
    importsOf(file)
      .filter((target) => /^(functions\/|@aws-|@aws-lambda-powertools|aws-lambda|@elastic\/|@opensearch-project\/)/.test(target))
      .map((target) => `${file} -> ${target}`),
  );
  expect(crossings).toEqual([]);
});
