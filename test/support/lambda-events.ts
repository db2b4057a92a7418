/** Realistic Lambda inputs: API Gateway HTTP API (payload 2.0) events, EventBridge schedule events, contexts. */
import { randomBytes, randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';

export interface HttpEventOptions {
  body?: unknown;
  /** A raw body string (sent as it is, e.g. invalid JSON). */
  rawBody?: string;
  query?: Record<string, string | string[]>;
  headers?: Record<string, string>;
  base64?: boolean;
  /** The caller API Gateway authenticated on an AWS_IAM route (requestContext.authorizer.iam): see iamCaller. */
  iam?: Record<string, unknown>;
}

/**
 * requestContext.authorizer.iam as API Gateway fills it for a SigV4-signed request: for a role
 * session, `userArn` is the assumed-role ARN and `callerId` / `userId` the role id and the session.
 */
export function iamCaller(userArn: string): Record<string, unknown> {
  const session = /:assumed-role\/[^/]+\/(.+)$/.exec(userArn)?.[1];
  const id = session ? `AROA${randomBytes(8).toString('hex').toUpperCase()}:${session}` : `AIDA${randomBytes(8).toString('hex').toUpperCase()}`;
  return {
    accessKey: `ASIA${randomBytes(8).toString('hex').toUpperCase()}`,
    accountId: userArn.split(':')[4],
    callerId: id,
    cognitoIdentity: null,
    principalOrgId: 'o-abc123def4',
    userArn,
    userId: id,
  };
}

export function httpEvent(method: 'GET' | 'POST', path: string, options: HttpEventOptions = {}): APIGatewayProxyEventV2 {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(options.query ?? {})) {
    for (const item of Array.isArray(value) ? value : [value]) params.append(name, item);
  }
  const rawQueryString = params.toString();
  const queryStringParameters: Record<string, string> = {};
  for (const name of new Set(params.keys())) queryStringParameters[name] = params.getAll(name).join(',');
  const text = options.rawBody ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  const requestId = `${randomBytes(6).toString('base64url')}=`;
  const now = new Date();
  return {
    version: '2.0',
    routeKey: `${method} ${path}`,
    rawPath: path,
    rawQueryString,
    headers: {
      accept: '*/*',
      'content-length': String(text ? Buffer.byteLength(text) : 0),
      ...(text ? { 'content-type': 'application/json' } : {}),
      host: 'abc123.execute-api.eu-west-1.amazonaws.com',
      'user-agent': 'curl/8.5.0',
      'x-amzn-trace-id': `Root=1-${Math.floor(now.getTime() / 1000).toString(16)}-${randomBytes(12).toString('hex')}`,
      'x-forwarded-for': '203.0.113.7',
      'x-forwarded-port': '443',
      'x-forwarded-proto': 'https',
      ...options.headers,
    },
    ...(rawQueryString ? { queryStringParameters } : {}),
    requestContext: {
      accountId: '123456789012',
      apiId: 'abc123',
      domainName: 'abc123.execute-api.eu-west-1.amazonaws.com',
      domainPrefix: 'abc123',
      http: { method, path, protocol: 'HTTP/1.1', sourceIp: '203.0.113.7', userAgent: 'curl/8.5.0' },
      ...(options.iam ? { authorizer: { iam: options.iam } } : {}),
      requestId,
      routeKey: `${method} ${path}`,
      stage: '$default',
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
    ...(text !== undefined ? { body: options.base64 ? Buffer.from(text).toString('base64') : text } : {}),
    isBase64Encoded: Boolean(options.base64 && text !== undefined),
  };
}

export function scheduleEvent(detail: Record<string, unknown> = {}) {
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    account: '123456789012',
    time: new Date().toISOString(),
    region: 'eu-west-1',
    resources: ['arn:aws:events:eu-west-1:123456789012:rule/es-lease-locks-dev-sweeper'],
    detail,
  };
}

export function lambdaContext(functionName: string, timeoutMs = 10_000): Context {
  const deadline = Date.now() + timeoutMs;
  const awsRequestId = randomUUID();
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: `es-lease-locks-test-${functionName}`,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:eu-west-1:123456789012:function:es-lease-locks-test-${functionName}`,
    memoryLimitInMB: '512',
    awsRequestId,
    logGroupName: `/aws/lambda/es-lease-locks-test-${functionName}`,
    logStreamName: `2026/01/01/[$LATEST]${randomBytes(16).toString('hex')}`,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
}
