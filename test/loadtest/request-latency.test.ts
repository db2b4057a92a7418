/** The deployment model's description of a server: each kind of request's latency, idle and under a lock-free load, on the real node. */
import { afterAll, describe, expect, it } from 'vitest';
import { measureLoadedLatency, measureRequestLatency } from '../../loadtests/runner/request-latency.js';
import { closeTestClient, testClient } from '../support/engine.js';

const client = testClient();
afterAll(() => closeTestClient(client));

describe('request latency', () => {
  it('idle: every kind measured, and the probe index removed', async () => {
    const index = `lt-latency-test-${process.pid}`;
    const idle = await measureRequestLatency(client, index, 4);
    for (const ms of Object.values(idle)) expect(ms).toBeGreaterThan(0);
    expect(await client.indices.exists({ index })).toBe(false);
  });

  it('under load: the kinds the load sends are measured, the others are not (NaN), and the requests really went out', async () => {
    const index = `lt-loaded-test-${process.pid}`;
    const loaded = await measureLoadedLatency(client, index, { write: 40, read: 10, refresh: 2, search: 0 }, 2);
    expect(loaded.write).toBeGreaterThan(0);
    expect(loaded.read).toBeGreaterThan(0);
    expect(loaded.refresh).toBeGreaterThan(0);
    expect(loaded.search).toBeGreaterThan(0); // each refresh is followed by a search
    expect(await client.indices.exists({ index })).toBe(false);
    const unloaded = await measureLoadedLatency(client, index, { write: 20, read: 0, refresh: 0, search: 0 }, 1);
    expect(unloaded.write).toBeGreaterThan(0);
    expect(unloaded.read).toBeNaN();
    expect(unloaded.refresh).toBeNaN();
  });
});
