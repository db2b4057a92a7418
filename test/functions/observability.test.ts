/**
 * Powertools: one structured log line per call with namespace, granularity, key and a correlation id;
 * EMF metrics with a granularity dimension; the tracer off outside Lambda.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { functionsUnderTest } from '../support/functions.js';
import { httpEvent, lambdaContext } from '../support/lambda-events.js';

const { handlers } = await functionsUnderTest({
  label: 'observe',
  env: { POWERTOOLS_LOG_LEVEL: 'INFO', POWERTOOLS_METRICS_DISABLED: 'false', POWERTOOLS_TRACE_ENABLED: 'false' },
});
let lines: string[] = [];
beforeEach(() => {
  lines = [];
  const write = process.stdout.write.bind(process.stdout);
  vi.spyOn(process.stdout, 'write').mockImplementation(((chunk: string | Uint8Array, ...rest: unknown[]) => {
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    if (text.startsWith('{')) {
      lines.push(...text.split('\n').filter(Boolean));
      return true;
    }
    return (write as (...args: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof process.stdout.write);
});
afterEach(() => vi.restoreAllMocks());

type Json = Record<string, any>;
const records = (): Json[] => lines.map((line) => JSON.parse(line) as Json);
const logs = (message: string) => records().filter((record) => record.message === message);
const emf = () => records().filter((record) => record._aws?.CloudWatchMetrics);

describe('observability', () => {
  it('sends the correlation id to Elasticsearch as X-Opaque-Id (it shows in its slow logs and tasks)', async () => {
    const { runtime } = await import('../../functions/runtime/runtime.js');
    const client = await runtime().client();
    const seen: unknown[] = [];
    const listener = (_: unknown, event: { meta?: { request?: { params?: { headers?: Record<string, unknown> } } } } | null) =>
      seen.push(event?.meta?.request?.params?.headers?.['x-opaque-id']);
    client.diagnostic.on('request', listener);
    try {
      const grant = (await handlers.acquire({ namespace: 'obs', granularity: 'global', owner: 'me', requestId: 'run-opaque' }, lambdaContext('acquire'))) as {
        leaseToken: string;
      };
      const releasing = lambdaContext('release');
      await handlers.release({ leaseToken: grant.leaseToken }, releasing);
      // The lock index is created at the container's first call, outside any one call: no id there.
      // Every request of the acquire (its first may read the lock index's shared settings) carries its id, then every one of the release carries the release's.
      const ids = seen.filter(Boolean);
      const firstOfRelease = ids.findIndex((id) => id !== 'run-opaque');
      expect(firstOfRelease).toBeGreaterThan(0);
      expect(new Set(ids.slice(0, firstOfRelease))).toEqual(new Set(['run-opaque']));
      expect(new Set(ids.slice(firstOfRelease))).toEqual(new Set([releasing.awsRequestId]));
    } finally {
      client.diagnostic.off('request', listener);
    }
  });

  it('logs the call with namespace, granularity, key and the API Gateway request id as correlation id', async () => {
    const event = httpEvent('POST', '/acquire', { body: { namespace: 'obs', granularity: 'tree', path: '/x/y', owner: 'me' } });
    const context = lambdaContext('acquire');
    const response = (await handlers.acquire(event, context)) as { body: string };
    const [line] = logs('acquire done');
    expect(line).toMatchObject({
      level: 'INFO',
      service: 'es-lease-locks',
      operation: 'acquire',
      namespace: 'obs',
      granularity: 'tree',
      key: '/x/y',
      correlation_id: event.requestContext.requestId,
      invocation: 'http',
      function_request_id: context.awsRequestId,
    });
    expect(line?.durationMs).toBeTypeOf('number');
    lines = [];
    await handlers.release({ leaseToken: JSON.parse(response.body).leaseToken }, lambdaContext('release')).catch(() => {});
  });

  it("a caller's x-correlation-id header wins over API Gateway's request id, in the logs and the answer", async () => {
    const event = httpEvent('POST', '/acquire', {
      body: { namespace: 'obs', granularity: 'global', owner: 'me' },
      headers: { 'x-correlation-id': 'caller-42' },
    });
    const response = (await handlers.acquire(event, lambdaContext('acquire'))) as { body: string; headers: Record<string, string> };
    expect(response.headers['x-correlation-id']).toBe('caller-42');
    expect(logs('acquire done')[0]).toMatchObject({ correlation_id: 'caller-42', invocation: 'http' });
    await handlers.release({ leaseToken: JSON.parse(response.body).leaseToken }, lambdaContext('release'));
  });

  it('direct invocations correlate by the requestId field, else the Lambda request id', async () => {
    const context = lambdaContext('acquire');
    const grant = (await handlers.acquire({ namespace: 'obs', granularity: 'global', owner: 'me', requestId: 'run-77' }, context)) as { leaseToken: string };
    expect(logs('acquire done')[0]).toMatchObject({ correlation_id: 'run-77', requestId: 'run-77', key: '*' });
    const releaseContext = lambdaContext('release');
    await handlers.release({ leaseToken: grant.leaseToken }, releaseContext);
    expect(logs('release done')[0]).toMatchObject({
      correlation_id: releaseContext.awsRequestId,
      namespace: 'obs',
      granularity: 'global',
      outcome: 'released',
    });
  });

  it('emits EMF metrics with granularity and operation dimensions: grants, conflicts, latency', async () => {
    const grant = (await handlers.acquire({ namespace: 'obs', granularity: 'document', ids: ['m-1'], owner: 'a' }, lambdaContext('acquire'))) as {
      leaseToken: string;
    };
    await handlers.acquire({ namespace: 'obs', granularity: 'document', ids: ['m-1'], owner: 'b' }, lambdaContext('acquire')).catch(() => {});
    await handlers.release({ leaseToken: grant.leaseToken }, lambdaContext('release'));
    const blobs = emf();
    const named = (name: string) => blobs.filter((blob) => blob._aws.CloudWatchMetrics[0].Metrics.some((metric: { Name: string }) => metric.Name === name));
    for (const name of ['LockGranted', 'LockConflict', 'LockReleased', 'EngineLatency']) expect(named(name).length, name).toBeGreaterThan(0);
    for (const blob of blobs) {
      expect(blob._aws.CloudWatchMetrics[0].Namespace).toBe('EsLeaseLocks');
      expect(blob._aws.CloudWatchMetrics[0].Dimensions[0]).toEqual(expect.arrayContaining(['service', 'operation', 'granularity']));
      expect(blob.granularity).toBe('document');
    }
    expect(named('LockConflict')[0]?.LockConflict).toBe(1);
    expect(named('EngineLatency')[0]?.EngineLatency).toBeGreaterThan(0);
  });

  it('counts renewals, losses and swept locks', async () => {
    const grant = (await handlers.acquire({ namespace: 'obs', granularity: 'global', owner: 'r' }, lambdaContext('acquire'))) as { leaseToken: string };
    const renewed = (await handlers.renew({ leaseToken: grant.leaseToken }, lambdaContext('renew'))) as { leaseToken: string };
    await handlers.release({ leaseToken: renewed.leaseToken }, lambdaContext('release'));
    await handlers.renew({ leaseToken: renewed.leaseToken }, lambdaContext('renew')).catch(() => {});
    await handlers.sweeper({}, lambdaContext('sweeper'));
    const names = emf().flatMap((blob) => blob._aws.CloudWatchMetrics[0].Metrics.map((metric: { Name: string }) => metric.Name));
    expect(names).toEqual(expect.arrayContaining(['LeaseRenewed', 'LeaseLost', 'LocksSwept', 'HoldersPruned', 'LeasesRunOut']));
    const sweep = emf().find((blob) => 'LocksSwept' in blob);
    expect(sweep?.granularity).toBe('all');
  });

  it('measures waiting: queue depth when queued, wait and hold times and hand-overs when the lock passes on', async () => {
    const target = { namespace: 'obs-queue', granularity: 'document', ids: ['q-1'] };
    const holder = (await handlers.acquire({ ...target, owner: 'holder', ttlMs: 10_000 }, lambdaContext('acquire'))) as { leaseToken: string };
    const waiting = handlers.acquire({ ...target, owner: 'waiter', ttlMs: 10_000, waitMs: 10_000 }, lambdaContext('acquire')) as Promise<{
      leaseToken: string;
      waitedMs: number;
    }>;
    await new Promise((resolve) => setTimeout(resolve, 300));
    await handlers.release({ leaseToken: holder.leaseToken }, lambdaContext('release'));
    const waiter = await waiting;
    expect(waiter.waitedMs).toBeGreaterThan(0);
    await handlers.release({ leaseToken: waiter.leaseToken }, lambdaContext('release'));
    const metric = (name: string) => emf().find((blob) => name in blob);
    expect(metric('WaitTime')?.WaitTime).toBe(waiter.waitedMs);
    expect(metric('HandOvers')).toMatchObject({ HandOvers: 1, operation: 'release', granularity: 'document' });
    expect(metric('HoldTime')?.HoldTime).toBeGreaterThanOrEqual(300);
  });

  it('counts leases that ran out unreleased (LeasesRunOut, what its alarm reads) with the sweep dimensions the alarm names', async () => {
    // Two holders that never come back: a shared lock of two owners, 1 s leases, swept after they ran out.
    for (const owner of ['gone-1', 'gone-2']) {
      await handlers.acquire({ namespace: 'obs-run-out', granularity: 'global', mode: 'shared', owner, ttlMs: 1_000 }, lambdaContext('acquire'));
    }
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    lines = [];
    await handlers.sweeper({}, lambdaContext('sweeper'));
    const sweep = emf().find((blob) => 'LeasesRunOut' in blob);
    expect(sweep?.LeasesRunOut).toBeGreaterThanOrEqual(2);
    expect(sweep?.LeasesRunOut).toBe(sweep?.HoldersPruned);
    expect(sweep?._aws.CloudWatchMetrics[0]).toMatchObject({ Namespace: 'EsLeaseLocks', Dimensions: [['service', 'operation', 'granularity']] });
    expect(sweep).toMatchObject({ service: 'es-lease-locks', operation: 'sweep', granularity: 'all' });
  });

  it('the tracer is off outside Lambda (POWERTOOLS_TRACE_ENABLED=false), so engine calls run untraced', async () => {
    const { runtime } = await import('../../functions/runtime/runtime.js');
    expect(runtime().tracer.isTracingEnabled()).toBe(false);
  });

  it('keeps no keys from one call to the next', async () => {
    await handlers
      .acquire({ namespace: 'obs', granularity: 'global', owner: 'k', requestId: 'only-this-one' }, lambdaContext('acquire'))
      .then((grant) => handlers.release({ leaseToken: (grant as { leaseToken: string }).leaseToken }, lambdaContext('release')));
    const release = logs('release done')[0];
    expect(release).toBeDefined();
    expect(release).not.toHaveProperty('requestId');
    expect(release?.correlation_id).not.toBe('only-this-one');
  });
});
