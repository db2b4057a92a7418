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
      store: { product: 'elasticsearch', nodes: ['https://es.example.com:9243'], requestTimeoutMs: 3_000 },
      lockIndex: 'locks',
      ttl: { defaultMs: 30_000, minMs: 1_000, maxMs: 900_000 },
      maxWaitMs: 60_000,
      sweep: { batchSize: 500, maxBatches: 20 },
      queue: { maxTickets: 1_000, wakeBytes: 2_048 },
      ensureIndex: false,
    });
    expect(config.tokenSigningKey).toBeUndefined();
    // Unset: the lock index's (a shared setting every process takes from it).
    expect(config).not.toHaveProperty('maxClockSkewMs');
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
      QUEUE_MAX_TICKETS: '50',
      QUEUE_WAKE_BYTES: '1024',
      LOCK_TOKEN_SIGNING_KEY: Buffer.alloc(16, 1).toString('base64'),
      FUNCTION_TIMEOUT_MS: '29000',
      LOCK_ENSURE_INDEX: 'true',
    });
    expect(config).toMatchObject({
      store: { apiKeyParameter: '/es-lease-locks/dev/es-api-key', requestTimeoutMs: 3_000 },
      lockIndex: 'locks-prod',
      ttl: { defaultMs: 10_000, minMs: 2_000, maxMs: 60_000 },
      maxClockSkewMs: 250,
      sweep: { batchSize: 100 },
      queue: { maxTickets: 50, wakeBytes: 1_024 },
      ensureIndex: true,
      // The longest wait that leaves room for the last attempt inside the function timeout.
      maxWaitMs: 29_000 - 2 * 3_000 - 1_000,
    });
    expect(config.store).not.toHaveProperty('apiKey');
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
    expect(readConfig({ ES_URL: 'https://es1:9200, https://es2:9200,https://es3:9200' }).store.nodes).toEqual([
      'https://es1:9200',
      'https://es2:9200',
      'https://es3:9200',
    ]);
    const cloud = readConfig({ ES_CLOUD_ID: 'deployment:ZXhhbXBsZS5jb20kYWJjJGRlZg==' });
    expect(cloud.store).toMatchObject({ nodes: [], cloudId: 'deployment:ZXhhbXBsZS5jb20kYWJjJGRlZg==' });
    expect(problems({ ES_URL: 'https://es1:9200,ftp://es2' })).toEqual([expect.stringContaining('ES_URL')]);
    expect(problems({ ES_CLOUD_ID: 'deployment:abc' })).toEqual([expect.stringContaining('keep one')]);
  });

  it('names every problem at once', () => {
    expect(problems({ ES_URL: 'not a url' })).toEqual([expect.stringContaining('ES_URL')]);
    expect(problems({ LOCK_TTL_MIN_MS: '5000', LOCK_TTL_DEFAULT_MS: '1000' })).toEqual([expect.stringContaining('LOCK_TTL')]);
    expect(problems({ QUEUE_MAX_TICKETS: '0' })).toEqual([expect.stringContaining('QUEUE_MAX_TICKETS')]);
    expect(problems({ QUEUE_WAKE_BYTES: '9000' })).toEqual([expect.stringContaining('QUEUE_WAKE_BYTES')]);
    expect(problems({ LOCK_TOKEN_SIGNING_KEY: Buffer.alloc(8).toString('base64') })).toEqual([expect.stringContaining('at least 16 bytes')]);
    expect(problems({ LOCK_TOKEN_SIGNING_KEY: 'not base64!' })).toEqual([expect.stringContaining('base64')]);
    expect(problems({ ES_REQUEST_TIMEOUT_MS: '9500', FUNCTION_TIMEOUT_MS: '10000' })).toEqual([expect.stringContaining('below FUNCTION_TIMEOUT_MS')]);
    expect(problems({ ES_API_KEY: 'k', ES_API_KEY_PARAMETER: '/p' })).toEqual([expect.stringContaining('keep one')]);
    expect(problems({ LOCK_INDEX: 'Locks', SWEEP_BATCH_SIZE: '0' })).toHaveLength(2);
  });
});

describe('readConfig: the lock store (LOCK_STORE)', () => {
  const domain = 'https://search-locks-abc123.eu-west-1.es.amazonaws.com';
  const openSearch = { POWERTOOLS_LOG_LEVEL: 'SILENT', LOCK_STORE: 'opensearch' };
  const storeProblems = (env: Record<string, string>): string[] => {
    try {
      readConfig({ ...openSearch, ...env });
      return [];
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      return (error as ConfigError).problems;
    }
  };

  it('is Elasticsearch unless LOCK_STORE says opensearch; any other value is refused', () => {
    expect(readConfig(base).store.product).toBe('elasticsearch');
    expect(readConfig({ ...base, LOCK_STORE: '' }).store.product).toBe('elasticsearch');
    expect(readConfig({ ...base, LOCK_STORE: 'elasticsearch' }).store.product).toBe('elasticsearch');
    expect(problems({ LOCK_STORE: 'OpenSearch' })).toEqual([expect.stringMatching(/^LOCK_STORE: must be elasticsearch or opensearch/)]);
  });

  it('with opensearch, needs OPENSEARCH_URL and none of ES_URL, ES_CLOUD_ID or the API key', () => {
    expect(readConfig({ ...openSearch, OPENSEARCH_URL: 'http://127.0.0.1:9201, http://127.0.0.1:9202' }).store).toEqual({
      product: 'opensearch',
      nodes: ['http://127.0.0.1:9201', 'http://127.0.0.1:9202'],
      requestTimeoutMs: 3_000,
    });
    expect(storeProblems({})).toEqual(['OPENSEARCH_URL: is required with LOCK_STORE=opensearch']);
    expect(storeProblems({ OPENSEARCH_URL: 'ftp://os' })).toEqual([expect.stringMatching(/^OPENSEARCH_URL(\.0)?: must be http\(s\) URLs/)]);
  });

  it('refuses an Elasticsearch API key or Cloud ID with opensearch (they would be silently ignored), and ignores ES_URL and the key parameter serverless.yml fills in', () => {
    expect(storeProblems({ OPENSEARCH_URL: domain, ES_API_KEY: 'a2V5' })).toEqual([
      expect.stringMatching(
        /^ES_API_KEY: must not be set with LOCK_STORE=opensearch: OpenSearch takes no Elasticsearch API key, so it would be silently ignored/,
      ),
    ]);
    expect(storeProblems({ OPENSEARCH_URL: domain, ES_CLOUD_ID: 'deployment:abc' })).toEqual([expect.stringMatching(/^ES_CLOUD_ID: must not be set/)]);
    const store = readConfig({
      ...openSearch,
      OPENSEARCH_URL: domain,
      ES_URL: 'https://es.example.com:9243',
      ES_API_KEY_PARAMETER: '/es-lease-locks/dev/es-api-key',
    }).store;
    expect(store).toMatchObject({ product: 'opensearch', nodes: [domain] });
    expect(store).not.toHaveProperty('apiKeyParameter');
  });

  it('signs by default for Amazon OpenSearch Service endpoints (service es, the region from the endpoint), and not for other hosts', () => {
    expect(readConfig({ ...openSearch, OPENSEARCH_URL: domain, AWS_REGION: 'us-east-1' }).store).toEqual({
      product: 'opensearch',
      nodes: [domain],
      sigv4: { region: 'eu-west-1', service: 'es' },
      requestTimeoutMs: 3_000,
    });
    const vpc = 'https://vpc-locks-abc123.eu-central-1.es.amazonaws.com';
    expect(readConfig({ ...openSearch, OPENSEARCH_URL: vpc }).store).toMatchObject({ sigv4: { region: 'eu-central-1', service: 'es' } });
    expect(readConfig({ ...openSearch, OPENSEARCH_URL: 'https://search.internal.example.com' }).store).not.toHaveProperty('sigv4');
    // One host outside AWS is enough not to sign: it would receive the role's session token.
    expect(readConfig({ ...openSearch, OPENSEARCH_URL: `${domain},https://proxy.example.com` }).store).not.toHaveProperty('sigv4');
  });

  it('lets an explicit OPENSEARCH_AUTH win both ways', () => {
    expect(readConfig({ ...openSearch, OPENSEARCH_URL: domain, OPENSEARCH_AUTH: 'none' }).store).not.toHaveProperty('sigv4');
    // A custom domain endpoint (own hostname): signed with the function's region.
    expect(readConfig({ ...openSearch, OPENSEARCH_URL: 'https://locks.example.com', OPENSEARCH_AUTH: 'sigv4', AWS_REGION: 'eu-west-1' }).store).toMatchObject({
      sigv4: { region: 'eu-west-1', service: 'es' },
    });
    expect(storeProblems({ OPENSEARCH_URL: domain, OPENSEARCH_AUTH: 'iam' })).toEqual([expect.stringMatching(/^OPENSEARCH_AUTH: must be sigv4 .* or none/)]);
  });

  it('takes the signing region from OPENSEARCH_REGION, else the endpoint, else AWS_REGION, and refuses one that cannot be right', () => {
    const custom = { OPENSEARCH_URL: 'https://locks.example.com', OPENSEARCH_AUTH: 'sigv4' };
    expect(readConfig({ ...openSearch, ...custom, OPENSEARCH_REGION: 'ap-southeast-2', AWS_REGION: 'eu-west-1' }).store).toMatchObject({
      sigv4: { region: 'ap-southeast-2' },
    });
    expect(readConfig({ ...openSearch, OPENSEARCH_URL: domain, OPENSEARCH_REGION: 'eu-west-1' }).store).toMatchObject({ sigv4: { region: 'eu-west-1' } });
    expect(storeProblems(custom)).toEqual([expect.stringMatching(/^OPENSEARCH_REGION: is required for SigV4/)]);
    expect(storeProblems({ OPENSEARCH_URL: domain, OPENSEARCH_REGION: 'us-east-1' })).toEqual([
      expect.stringMatching(/^OPENSEARCH_REGION \(us-east-1\) differs from the region of the OPENSEARCH_URL endpoint \(eu-west-1\)/),
    ]);
    expect(storeProblems({ OPENSEARCH_URL: `${domain},https://search-locks-abc123.us-east-1.es.amazonaws.com` })).toEqual([
      expect.stringMatching(/^OPENSEARCH_URL: names endpoints in several regions/),
    ]);
    expect(storeProblems({ ...custom, OPENSEARCH_REGION: 'Ireland' })).toEqual([expect.stringMatching(/^OPENSEARCH_REGION: must be an AWS region/)]);
  });

  it('signs only over https', () => {
    expect(storeProblems({ OPENSEARCH_URL: 'http://locks.example.com:9200', OPENSEARCH_AUTH: 'sigv4', AWS_REGION: 'eu-west-1' })).toEqual([
      expect.stringMatching(/^OPENSEARCH_URL: must be https:\/\/ with OPENSEARCH_AUTH=sigv4/),
    ]);
  });

  it('refuses OpenSearch Serverless (aoss), by service or by endpoint, and says why', () => {
    const [byService] = storeProblems({ OPENSEARCH_URL: domain, OPENSEARCH_SIGV4_SERVICE: 'aoss' });
    expect(byService).toMatch(/^OPENSEARCH_SIGV4_SERVICE: OpenSearch Serverless collections \(aoss\) cannot hold the lock index/);
    expect(byService).toContain('if_seq_no/if_primary_term');
    expect(byService).toContain('realtime GET');
    expect(byService).toContain('use an Amazon OpenSearch Service domain (es)');
    expect(storeProblems({ OPENSEARCH_URL: 'https://abc123xyz.eu-west-1.aoss.amazonaws.com' })).toEqual([
      expect.stringMatching(/^OPENSEARCH_URL: OpenSearch Serverless collections \(aoss\) cannot hold the lock index/),
    ]);
    expect(readConfig({ ...openSearch, OPENSEARCH_URL: domain, OPENSEARCH_SIGV4_SERVICE: 'es' }).store).toMatchObject({ sigv4: { service: 'es' } });
    expect(storeProblems({ OPENSEARCH_URL: domain, OPENSEARCH_SIGV4_SERVICE: 'es-serverless' })).toEqual([
      expect.stringMatching(/^OPENSEARCH_SIGV4_SERVICE: must be es/),
    ]);
  });

  it('refuses the SigV4 settings where nothing is signed', () => {
    expect(storeProblems({ OPENSEARCH_URL: 'http://127.0.0.1:9201', OPENSEARCH_SIGV4_SERVICE: 'es', OPENSEARCH_REGION: 'eu-west-1' })).toEqual([
      expect.stringMatching(
        /^OPENSEARCH_SIGV4_SERVICE: only applies to SigV4-signed requests \(OPENSEARCH_AUTH is none by default for hosts outside amazonaws.com\)/,
      ),
      expect.stringMatching(/^OPENSEARCH_REGION: only applies to SigV4-signed requests/),
    ]);
    expect(storeProblems({ OPENSEARCH_URL: domain, OPENSEARCH_AUTH: 'none', OPENSEARCH_REGION: 'eu-west-1' })).toEqual([
      expect.stringContaining('(OPENSEARCH_AUTH=none)'),
    ]);
  });

  it('points at LOCK_STORE when OPENSEARCH_URL is set but the store is still Elasticsearch', () => {
    expect(problems({ ES_URL: '', OPENSEARCH_URL: domain })).toEqual([
      'ES_URL: is required (or ES_CLOUD_ID); OPENSEARCH_URL is set: for OpenSearch, set LOCK_STORE=opensearch',
    ]);
  });

  it('builds an OpenSearch client from the configuration, and reads no Elasticsearch API key secret for it', async () => {
    const readSecret = vi.fn(async () => 'never');
    const runtime = createRuntime({
      env: { ...base, ...openSearch, OPENSEARCH_URL: 'http://127.0.0.1:9', ES_API_KEY_PARAMETER: '/es-lease-locks/dev/es-api-key' },
      readSecret,
    });
    const client = await runtime.client();
    expect(client.product).toBe('opensearch');
    expect(readSecret).not.toHaveBeenCalled();
    await client.close();
    const elasticsearch = await createRuntime({ env: base }).client();
    expect(elasticsearch.product).toBe('elasticsearch');
    await elasticsearch.close();
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
    const [first, second] = await Promise.all([runtime.engine(), runtime.engine()]);
    expect(first).toBe(second);
    expect(readSecret).toHaveBeenCalledTimes(4);
    await runtime.engine();
    expect(readSecret).toHaveBeenCalledTimes(4);
    expect(first.engine.settings.tokenSigningKey).toEqual(new Uint8Array(Buffer.alloc(32, 9)));
    await first.client.close();
  });

  it('a signing key secret that is too short fails the container start-up of the store', async () => {
    const runtime = createRuntime({
      env: { ...base, LOCK_TOKEN_SIGNING_KEY_PARAMETER: '/es/signing', LOCK_ENSURE_INDEX: 'false' },
      readSecret: async () => Buffer.alloc(4).toString('base64'),
    });
    await expect(runtime.engine()).rejects.toThrow(/at least 16 bytes/);
  });
});
