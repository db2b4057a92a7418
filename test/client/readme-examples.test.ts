/**
 * What the READMEs show is what runs: the README's consumer is examples/invoicer/ (invoicer.ts and
 * handler.ts), and the client README's test of it is test/examples/invoicer.test.ts (the same code,
 * but for the handler's import path).
 */
import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { ROOT } from '../../scripts/stack.js';

/** A file's code after its header comment. */
function codeAfterHeader(file: string): string {
  const text = readFileSync(`${ROOT}/${file}`, 'utf8');
  return text.slice(text.indexOf('*/\n') + 3);
}

/** The first TypeScript block of a README's section. */
function shownIn(readmeFile: string, heading: string): string {
  const readme = readFileSync(`${ROOT}/${readmeFile}`, 'utf8');
  const section = readme.slice(readme.indexOf(heading));
  const start = section.indexOf('```ts\n') + 6;
  return section.slice(start, section.indexOf('```\n', start));
}

it("the README's consumer is examples/invoicer/", () => {
  const files = `// invoicer.ts\n${codeAfterHeader('examples/invoicer/invoicer.ts')}\n// handler.ts: the clients at module scope, one per container\n${codeAfterHeader('examples/invoicer/handler.ts')}`;
  expect(shownIn('README.md', '## Use it from your function')).toBe(files);
});

it("the client README's test of it is test/examples/invoicer.test.ts, as it runs", () => {
  const test = codeAfterHeader('test/examples/invoicer.test.ts').replace("from '../../examples/invoicer/invoicer.js'", "from './invoicer.js'");
  expect(shownIn('packages/client/README.md', '## Testing your handler')).toBe(test);
});
