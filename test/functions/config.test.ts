/** Configuration from the environment, and secrets read once per container. */
import { describe, expect, it, vi } from 'vitest';
import { ConfigError, readConfig } from '../../functions/runtime/config.js';
import { createRuntime } from '../../functions/runtime/runtime.js';
import { pickSecret, secretSource } from '../../functions/runtime/secrets.js';

const base = { ES_URL: 'http://127.0.0.1:9', POWERTOOLS_LOG_LEVEL: 'SILENT', POWERTOOLS_METRICS_DISABLED: 'true', POWERTOOLS_TRACE_ENABLED: 'false' };
const problems = (env: Record<string, string>): string[] => {
  try {
    readConfig({ ...base, ...env });
    return [];
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems;
  }
};

describe('readConfig', () => {
  it('has defaults for everything but ES_URL', () => {
    const config = readConfig({ ES_URL: 'https://es.example.com:9243' });
    expect(config).toMatchObject({
      es: { nodes: ['https://es.example.com:9243'], requestTimeoutMs: 3_000 },
      lockIndex: 'locks',
      ttl: { defaultMs: 30_000, minMs: 1_000, maxMs: 900_000 },
      maxClockSkewMs: 500,
      maxWaitMs: 60_000,
      sweep: { batchSize: 500, maxBatches: 20 },
      ensureIndex: false,
    });
    expect(config.tokenSigningKey).toBeUndefined();
    expect(() => readConfig({})).toThrow(/ES_URL/);
  });

  it('reads every setting and treats blank values as unset', () => {
    const config = readConfig({
      ...base,
      ES_API_KEY: '',
      ES_API_KEY_PARAMETER: '/es-lease-locks/dev/es-api-key',
      LOCK_INDEX: 'locks-prod',
      LOCK_TTL_DEFAULT_MS: '10000',
      LOCK_TTL_MIN_MS: '2000',
      LOCK_TTL_MAX_MS: '60000',
      MAX_CLOCK_SKEW_MS: '250',
      SWEEP_BATCH_SIZE: '100',
      LOCK_TOKEN_SIGNING_KEY: Buffer.alloc(16, 1).toString('base64'),
      FUNCTION_TIMEOUT_MS: '29000',
      LOCK_ENSURE_INDEX: 'true',
    });
    expect(config).toMatchObject({
      es: { apiKeyParameter: '/es-lease-locks/dev/es-api-key', requestTimeoutMs: 3_000 },
      lockIndex: 'locks-prod',
      ttl: { defaultMs: 10_000, minMs: 2_000, maxMs: 60_000 },
      maxClockSkewMs: 250,
      sweep: { batchSize: 100 },
      ensureIndex: true,
      // The longest wait that leaves room for the last attempt inside the function timeout.
      maxWaitMs: 29_000 - 2 * 3_000 - 1_000,
    });
    expect(config.es.apiKey).toBeUndefined();
    expect(config.tokenSigningKey).toEqual(new Uint8Array(16).fill(1));
  });

  it('creates the lock index only when LOCK_ENSURE_INDEX is exactly "true" (unset or blank is off, anything else is refused)', () => {
    expect(readConfig(base).ensureIndex).toBe(false);
    expect(readConfig({ ...base, LOCK_ENSURE_INDEX: '' }).ensureIndex).toBe(false);
    expect(readConfig({ ...base, LOCK_ENSURE_INDEX: 'false' }).ensureIndex).toBe(false);
    expect(readConfig({ ...base, LOCK_ENSURE_INDEX: 'true' }).ensureIndex).toBe(true);
    expect(problems({ LOCK_ENSURE_INDEX: 'yes' })).toEqual([expect.stringContaining('LOCK_ENSURE_INDEX')]);
  });

  it('reaches a self-managed cluster through several nodes, or Elastic Cloud by its Cloud ID', () => {
    expect(readConfig({ ES_URL: 'https://es1:9200, https://es2:9200,https://es3:9200' }).es.nodes).toEqual([
      'https://es1:9200',
      'https://es2:9200',
      'https://es3:9200',
    ]);
    const cloud = readConfig({ ES_CLOUD_ID: 'deployment:ZXhhbXBsZS5jb20kYWJjJGRlZg==' });
    expect(cloud.es).toMatchObject({ nodes: [], cloudId: 'deployment:ZXhhbXBsZS5jb20kYWJjJGRlZg==' });
    expect(problems({ ES_URL: 'https://es1:9200,ftp://es2' })).toEqual([expect.stringContaining('ES_URL')]);
    expect(problems({ ES_CLOUD_ID: 'deployment:abc' })).toEqual([expect.stringContaining('keep one')]);
  });

  it('names every problem at once', () => {
    expect(problems({ ES_URL: 'not a url' })).toEqual([expect.stringContaining('ES_URL')]);
    expect(problems({ LOCK_TTL_MIN_MS: '5000', LOCK_TTL_DEFAULT_MS: '1000' })).toEqual([expect.stringContaining('LOCK_TTL')]);
    expect(problems({ LOCK_TOKEN_SIGNING_KEY: Buffer.alloc(8).toString('base64') })).toEqual([expect.stringContaining('at least 16 bytes')]);
    expect(problems({ LOCK_TOKEN_SIGNING_KEY: 'not base64!' })).toEqual([expect.stringContaining('base64')]);
    expect(problems({ ES_REQUEST_TIMEOUT_MS: '9500', FUNCTION_TIMEOUT_MS: '10000' })).toEqual([expect.stringContaining('below FUNCTION_TIMEOUT_MS')]);
    expect(problems({ ES_API_KEY: 'k', ES_API_KEY_PARAMETER: '/p' })).toEqual([expect.stringContaining('keep one')]);
    expect(problems({ LOCK_INDEX: 'Locks', SWEEP_BATCH_SIZE: '0' })).toHaveLength(2);
  });
});

describe('secrets', () => {
  it('tells SSM parameters from Secrets Manager secrets', () => {
    expect(secretSource('/es-lease-locks/prod/es-api-key')).toEqual({ kind: 'ssm', name: '/es-lease-locks/prod/es-api-key' });
    expect(secretSource('ssm:es-api-key')).toEqual({ kind: 'ssm', name: 'es-api-key' });
    expect(secretSource('arn:aws:secretsmanager:eu-west-1:123456789012:secret:es-lease-locks/prod/es-AbCdEf')).toMatchObject({ kind: 'secretsmanager' });
    expect(secretSource('secretsmanager:es-lease-locks/prod/es')).toEqual({ kind: 'secretsmanager', id: 'es-lease-locks/prod/es' });
  });

  it('takes the key itself or a field of a JSON secret', () => {
    expect(pickSecret('abc==', ['apiKey'])).toBe('abc==');
    expect(pickSecret('{"apiKey":"xyz","other":1}', ['apiKey'])).toBe('xyz');
    expect(pickSecret('{"encoded":"e"}', ['apiKey', 'encoded'])).toBe('e');
  });

  it('are read once per container, concurrent first calls included, and again only after a failure', async () => {
    const signingKey = Buffer.alloc(32, 9).toString('base64');
    let failNext = true;
    const readSecret = vi.fn(async (reference: string) => {
      if (reference.includes('signing')) return JSON.stringify({ signingKey });
      if (failNext) {
        failNext = false;
        throw new Error('throttled');
      }
      return 'the-api-key';
    });
    const runtime = createRuntime({
      env: { ...base, ES_API_KEY_PARAMETER: '/es/key', LOCK_TOKEN_SIGNING_KEY_PARAMETER: '/es/signing', LOCK_ENSURE_INDEX: 'false' },
      readSecret,
    });
    await expect(runtime.client()).rejects.toThrow('throttled');
    const [first, second] = await Promise.all([runtime.store(), runtime.store()]);
    expect(first).toBe(second);
    expect(readSecret).toHaveBeenCalledTimes(4);
    await runtime.store();
    expect(readSecret).toHaveBeenCalledTimes(4);
    expect(first.engine.settings.tokenSigningKey).toEqual(new Uint8Array(Buffer.alloc(32, 9)));
    await first.client.close();
  });

  it('a signing key secret that is too short fails the container start-up of the store', async () => {
    const runtime = createRuntime({
      env: { ...base, LOCK_TOKEN_SIGNING_KEY_PARAMETER: '/es/signing', LOCK_ENSURE_INDEX: 'false' },
      readSecret: async () => Buffer.alloc(4).toString('base64'),
    });
    await expect(runtime.store()).rejects.toThrow(/at least 16 bytes/);
  });
});
