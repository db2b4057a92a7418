/** The user's own workload: paths (file or index) and a trace, validated with readable errors. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createElasticsearchClient } from '../../functions/store/index.js';
import { parseCli } from '../../loadtests/runner/cli.js';
import { ConfigError } from '../../loadtests/runner/config-error.js';
import { readIndexPaths } from '../../loadtests/runner/user-workload.js';
import { defaultWorkload } from '../../loadtests/shared/defaults.js';
import { parsePathList, parseTrace, traceOperations, treeFromPaths, treeFromTrace, userWorkloadOf } from '../../loadtests/shared/user-workload.js';
import { MAX_IDS_PER_REQUEST, operationSource } from '../../loadtests/shared/workload.js';

const dir = mkdtempSync(join(tmpdir(), 'lt-user-'));
const file = (name: string, text: string): string => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

describe('paths', () => {
  it('make a tree: listed paths are files, their ancestors directories', () => {
    const tree = treeFromPaths(['/p/a/x.txt', '/p/a/y.txt', '/p/b/z.txt', '/q.txt']);
    expect(tree.files).toEqual(['/p/a/x.txt', '/p/a/y.txt', '/p/b/z.txt', '/q.txt']);
    expect(tree.dirs.map((d) => [d.path, d.files.length])).toEqual([
      ['/p', 3],
      ['/p/a', 2],
      ['/p/b', 1],
    ]);
  });

  it('are checked line by line, with the line number and the rule', () => {
    const { paths, problems } = parsePathList('/ok/a.txt\n\n# a comment\nrelative/b.txt\n/bad//c.txt\n/d/../e.txt\n/f/\n', 'paths.txt');
    expect(paths).toEqual(['/ok/a.txt']);
    expect(problems).toEqual([
      'paths.txt line 4: "relative/b.txt" must start with "/"',
      'paths.txt line 5: "/bad//c.txt" has an empty segment ("//")',
      'paths.txt line 6: "/d/../e.txt" has a "." or ".." segment',
      'paths.txt line 7: "/f/" must not end with "/"',
    ]);
  });

  it('refuse a directory too big for a rename under document locks, naming it', () => {
    const many = Array.from({ length: MAX_IDS_PER_REQUEST }, (_, i) => `/big/f${i}.txt`);
    expect(() => treeFromPaths(many)).toThrow(/directory \/big has 500 files below it/);
  });

  it('from a file, through the CLI: a missing file or a bad line stops the run before anything starts', () => {
    expect(parseCli(['--paths', file('paths.txt', '/a/b.txt\n/a/c/d.txt\n')]).config.user?.paths?.list).toEqual(['/a/b.txt', '/a/c/d.txt']);
    expect(() => parseCli(['--paths', join(dir, 'nope.txt')])).toThrow(/^--paths .*nope\.txt: no such file$/);
    expect(() => parseCli(['--paths', file('bad.txt', 'x\n')])).toThrow(/--paths .*bad\.txt line 1: "x" must start with "\/"/);
    expect(() => parseCli(['--paths', file('p2.txt', '/a.txt\n'), '--from-index', 'files'])).toThrow(/give one source of paths/);
    expect(() => parseCli(['--path-field', 'path'])).toThrow(/--path-field: only with --from-index/);
  });
});

describe('traces', () => {
  it('are JSON lines of op, target and time (seconds or ISO-8601), sorted and starting at 0', () => {
    const { entries, problems } = parseTrace(
      ['{"op":"edit","target":"/a/x.txt","time":"2026-11-22T10:00:01.500Z"}', '{"op":"rename","target":"/a","time":"2026-11-22T10:00:00Z"}'].join('\n'),
      't.jsonl',
    );
    expect(problems).toEqual([]);
    expect(entries).toEqual([
      { op: 'rename', target: '/a', atMs: 0 },
      { op: 'edit', target: '/a/x.txt', atMs: 1500 },
    ]);
  });

  it('name the line and the rule of every mistake', () => {
    const { problems } = parseTrace(
      ['nope', '{"op":"write","target":"/a","time":1}', '{"op":"read","target":"a","time":-1}', '{"op":"read","target":"/a","time":1,"who":"me"}'].join('\n'),
      't.jsonl',
    );
    expect(problems).toEqual([
      't.jsonl line 1: not JSON (expected {"op": "edit", "target": "/a/b.txt", "time": 12.5})',
      't.jsonl line 2: op must be one of read, edit, rename, create, delete (got "write")',
      't.jsonl line 3: target must start with "/"',
      't.jsonl line 3: time must be seconds (a number >= 0) or an ISO-8601 timestamp (got -1)',
      't.jsonl line 4: unknown field "who" (fields: op, target, time)',
    ]);
  });

  it('replay their operations in order; a rename touches every file below its directory', () => {
    const { entries } = parseTrace(
      ['{"op":"edit","target":"/a/x.txt","time":0}', '{"op":"create","target":"/a/new.txt","time":0.5}', '{"op":"rename","target":"/a","time":1}'].join('\n'),
      't',
    );
    const tree = treeFromTrace(entries);
    const source = operationSource(defaultWorkload(), { tree, sequence: traceOperations(entries, tree) });
    const ops = [0, 1, 2, 3].map((index) => source.next(Math.random, index));
    expect(ops.map((op) => [op.kind, op.target])).toEqual([
      ['edit', '/a/x.txt'],
      ['create', '/a/new.txt'],
      ['rename', '/a'],
      ['edit', '/a/x.txt'],
    ]);
    expect(ops[2]!.files).toEqual(['/a/new.txt', '/a/x.txt']);
  });

  it('through the CLI: a rename of a directory the paths do not have is refused, and --mix does not mix with a trace', () => {
    const paths = file('tree.txt', '/a/x.txt\n');
    const trace = file('trace.jsonl', '{"op":"rename","target":"/b","time":0}\n');
    expect(() => parseCli(['--paths', paths, '--trace', trace])).toThrow(/--trace .*trace\.jsonl: the trace renames \/b, which is no directory of the tree/);
    expect(() => parseCli(['--trace', file('ok.jsonl', '{"op":"read","target":"/a/x.txt","time":0}\n'), '--mix', '1/1/1'])).toThrow(/--trace with --mix/);
    expect(() => parseCli(['--trace', file('ok2.jsonl', '{"op":"read","target":"/a/x.txt","time":0}\n'), '--trace-speed', '0'])).toThrow(
      /--trace-speed: must be a number in \(0, 1000\]/,
    );
  });

  it("a workload's files make the tree and the trace's operations, as both sides read them (k6's open, Node's readFileSync)", () => {
    const files: Record<string, string> = {
      'p.txt': '/a/x.txt\n/a/y.txt\n/b/z.txt\n',
      't.jsonl': '{"op":"edit","target":"/a/x.txt","time":0}\n{"op":"rename","target":"/a","time":0.5}\n',
    };
    const read = (name: string): string => files[name]!;
    expect(userWorkloadOf({}, read)).toEqual({});
    const fromPaths = userWorkloadOf({ pathsFile: 'p.txt' }, read);
    expect(fromPaths.tree!.files).toEqual(['/a/x.txt', '/a/y.txt', '/b/z.txt']);
    expect(fromPaths.sequence).toBeUndefined();
    const both = userWorkloadOf({ pathsFile: 'p.txt', traceFile: 't.jsonl' }, read);
    expect(both.tree!.files).toHaveLength(3);
    expect(both.trace!.map((entry) => entry.atMs)).toEqual([0, 500]);
    expect(both.sequence!.map((op) => [op.kind, op.target, op.files.length])).toEqual([
      ['edit', '/a/x.txt', 1],
      ['rename', '/a', 2],
    ]);
    // Without paths the trace's targets make the tree.
    expect(userWorkloadOf({ traceFile: 't.jsonl' }, read).tree!.files).toEqual(['/a/x.txt']);
  });
});

describe('paths from an Elasticsearch index', () => {
  const esUrl = inject('esUrl');
  const apiKey = inject('esApiKey');
  const client = createElasticsearchClient({ url: esUrl, ...(apiKey ? { apiKey } : {}) });
  const index = `lt-user-files-${process.pid}`;

  beforeAll(async () => {
    await client.indices.create({ index, mappings: { properties: { meta: { properties: { path: { type: 'keyword' } } } } } });
    const docs = Array.from({ length: 1_200 }, (_, i) => ({ meta: { path: `/d${i % 7}/f${i}.json` } }));
    await client.bulk({
      refresh: true,
      operations: [...docs.flatMap((doc) => [{ index: { _index: index } }, doc]), { index: { _index: index } }, { other: 1 }],
    });
  });
  afterAll(async () => {
    await client.indices.delete({ index }, { ignore: [404] });
    await client.close();
  });

  it("reads every document's path field past the first page, up to the limit", async () => {
    const all = await readIndexPaths(client, esUrl, { name: index, field: 'meta.path', max: 20_000 });
    expect(all.list).toHaveLength(1_200);
    expect(treeFromPaths(all.list).dirs.map((d) => d.path)).toEqual(Array.from({ length: 7 }, (_, i) => `/d${i}`));
    expect((await readIndexPaths(client, esUrl, { name: index, field: 'meta.path', max: 50 })).list).toHaveLength(50);
  });

  it('says which index or field is missing', async () => {
    await expect(readIndexPaths(client, esUrl, { name: `${index}-nope`, field: 'path', max: 10 })).rejects.toThrow(ConfigError);
    await expect(readIndexPaths(client, esUrl, { name: `${index}-nope`, field: 'path', max: 10 })).rejects.toThrow(/no index "lt-user-files-\d+-nope" on /);
    await expect(readIndexPaths(client, esUrl, { name: index, field: 'path', max: 10 })).rejects.toThrow(
      /no document of lt-user-files-\d+ has a string "path" \(1201 documents without it\)/,
    );
  });
});
