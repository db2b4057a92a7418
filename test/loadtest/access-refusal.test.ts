/** The one line for a refused or failed call to a deployed stage, and the flags that sign the kit's requests. */
import { describe, expect, it } from 'vitest';
import { parseCli } from '../../loadtests/runner/cli.js';
import { signingRegion } from '../../loadtests/runner/signing-proxy.js';
import { explainRefusal, routeArn, SIGNING_PROXY_ERROR } from '../../loadtests/shared/access-refusal.js';

const TARGET = 'https://abc123.execute-api.eu-west-1.amazonaws.com';

describe('a refusal in one line', () => {
  it('names execute-api:Invoke on the route, from the gateway message or the target host', () => {
    expect(explainRefusal({ method: 'POST', path: '/acquire', status: 403, body: '{"message":"Forbidden"}', target: TARGET })).toBe(
      "the kit's role lacks execute-api:Invoke on arn:aws:execute-api:eu-west-1:*:abc123/*/POST/acquire",
    );
    expect(routeArn('http://127.0.0.1:3000', 'GET', '/health')).toBe('127.0.0.1 GET /health');
    const message =
      'User: arn:aws:sts::1:assumed-role/r/s is not authorized to perform: execute-api:Invoke on resource: arn:aws:execute-api:eu-west-1:1:abc123/$default/POST/release';
    expect(explainRefusal({ method: 'POST', path: '/release', status: 403, body: JSON.stringify({ message }), target: TARGET })).toBe(
      "the kit's role (arn:aws:sts::1:assumed-role/r/s) lacks execute-api:Invoke on arn:aws:execute-api:eu-west-1:1:abc123/$default/POST/release",
    );
  });

  it('names the namespace policy, the principal and the namespace for an AccessDeniedError', () => {
    const body = JSON.stringify({ error: 'AccessDeniedError', reason: 'unknown_principal', action: 'acquire', namespace: 'lt-warmup-1' });
    expect(explainRefusal({ method: 'POST', path: '/acquire', status: 403, body, target: TARGET })).toBe(
      "the namespace policy does not allow the kit's role to acquire in lt-warmup-1 (the kit locks in lt-* namespaces; reason: unknown_principal)",
    );
  });

  it("passes on the signing proxy's and the gateway's other words, and says nothing of a success", () => {
    const proxy = JSON.stringify({ error: SIGNING_PROXY_ERROR, message: 'no AWS credentials to sign with: Could not load credentials from any providers' });
    expect(explainRefusal({ method: 'GET', path: '/health', status: 500, body: proxy, target: TARGET })).toBe(
      'GET /health: no AWS credentials to sign with: Could not load credentials from any providers',
    );
    const expired = '{"message":"The security token included in the request is expired"}';
    expect(explainRefusal({ method: 'GET', path: '/health', status: 403, body: expired, target: TARGET })).toBe(
      'GET /health refused with 403: The security token included in the request is expired',
    );
    expect(explainRefusal({ method: 'GET', path: '/health', status: 503, body: '{"message":"store down"}', target: TARGET })).toBe(
      `GET ${TARGET}/health answered 503: store down`,
    );
    expect(explainRefusal({ method: 'GET', path: '/health', status: 200, body: '{}', target: TARGET })).toBeUndefined();
  });
});

describe('signing flags', () => {
  it('signs by default with --target, in the region of the host unless --region says otherwise', () => {
    const { config } = parseCli(['--target', TARGET]);
    expect(config.sign).toBe(true);
    expect(signingRegion(TARGET, config.region)).toBe('eu-west-1');
    expect(signingRegion(TARGET, parseCli(['--target', TARGET, '--region', 'eu-central-1']).config.region)).toBe('eu-central-1');
    expect(parseCli(['--target', TARGET, '--no-sign']).config.sign).toBe(false);
  });

  it('refuses a region that is not one, or one without --target', () => {
    expect(() => parseCli(['--target', TARGET, '--region', 'Europe'])).toThrow(/--region.*expected an AWS region/);
    expect(() => parseCli(['--region', 'eu-west-1'])).toThrow(/--region: only with --target/);
  });

  it('asks for a region when neither the host nor the environment gives one', () => {
    const saved = { region: process.env.AWS_REGION, fallback: process.env.AWS_DEFAULT_REGION };
    delete process.env.AWS_REGION;
    delete process.env.AWS_DEFAULT_REGION;
    try {
      expect(() => signingRegion('https://locks.example.com')).toThrow(/no region to sign for .*give --region, or set AWS_REGION/);
    } finally {
      if (saved.region !== undefined) process.env.AWS_REGION = saved.region;
      if (saved.fallback !== undefined) process.env.AWS_DEFAULT_REGION = saved.fallback;
    }
  });
});
