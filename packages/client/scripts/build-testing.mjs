// Builds the testing entry (`@es-lease-locks/client/testing`): the lock engine and its in-memory
// store bundled into dist/testing.js (the package ships no dependency on the service's code), this
// package's own entry left as an import so that errors are the same classes as the user's; and
// each testing module's declarations, which must name nothing of the engine.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { build } from 'esbuild';
import ts from 'typescript';

const root = new URL('..', import.meta.url).pathname;
const sources = join(root, 'src/testing');

await build({
  entryPoints: [join(sources, 'index.ts')],
  outfile: join(root, 'dist/testing.js'),
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  conditions: ['@es-lease-locks/source'],
  external: ['@es-lease-locks/client'],
  legalComments: 'none',
  // Smaller, still readable in a stack trace: the names stay (error classes are matched by name).
  minifySyntax: true,
  minifyWhitespace: true,
  keepNames: true,
  logLevel: 'warning',
});

const options = { isolatedDeclarations: true, declaration: true, stripInternal: true, module: ts.ModuleKind.NodeNext, target: ts.ScriptTarget.ES2022 };
mkdirSync(join(root, 'dist/testing'), { recursive: true });
for (const file of readdirSync(sources).filter((name) => name.endsWith('.ts'))) {
  const { outputText, diagnostics } = ts.transpileDeclaration(readFileSync(join(sources, file), 'utf8'), { fileName: file, compilerOptions: options });
  if (diagnostics?.length) throw new Error(`${file}: ${diagnostics.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n')).join('; ')}`);
  if (outputText.includes('@es-lease-locks/engine'))
    throw new Error(`${file}: its declarations name the engine; the testing entry's types must be the package's own`);
  writeFileSync(join(root, 'dist/testing', `${basename(file, '.ts')}.d.ts`), outputText);
}
