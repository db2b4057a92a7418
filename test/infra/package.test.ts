/**
 * `serverless package` (osls + serverless-esbuild) without AWS credentials: the CloudFormation it
 * generates has the functions, their routes (the same as the OpenAPI document's), the sweeper's
 * schedule, the example SQS consumer with its queues (only with the param examples=true),
 * least-privilege IAM, and one small ESM bundle per function that loads in plain Node; with the
 * OpenSearch params, the functions reach an Amazon OpenSearch Service domain in its VPC and may call
 * that domain alone. Outside the `local` stage it refuses the unsafe settings (routes without IAM,
 * lockPolicy allow-all, OpenSearch unsigned) unless i-accept-unsafe-defaults=true, itself refused in
 * prod and production.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readConfig } from '../../functions/runtime/config.js';
import { ROOT } from '../../scripts/stack.js';
import { openapi } from '../support/contract.js';

const run = promisify(execFile);
/** The lock functions, in every package. */
const LOCK_FUNCTIONS = ['acquire', 'renew', 'release', 'inspect', 'list', 'revoke', 'drain', 'status', 'health', 'sweeper'];
/** With the param examples=true (the dev package here), the example SQS consumer too. */
const FUNCTIONS = [...LOCK_FUNCTIONS, 'sqsConsumer'];
/** The examples' resources (custom.examples in serverless.yml), besides the consumer's own function, version, log group and event source mapping. */
const EXAMPLE_RESOURCES = ['LockedWorkQueue', 'LockedWorkDeadLetterQueue', 'DeadLetterQueueDepthAlarm'];
/** The unsafe settings the package-time guards refuse outside `local` (infra/unsafe.cjs), one combination each. */
const UNSAFE: Record<string, string[]> = {
  'routes without IAM authorization': ['httpAuthorizationType=NONE'],
  'lockPolicy allow-all': ['lockPolicy=allow-all'],
  'OpenSearch without SigV4': ['lockStore=opensearch', 'openSearchUrl=https://search-locks-abc.eu-west-1.es.amazonaws.com', 'openSearchAuth=none'],
};
const ACCEPT_UNSAFE = 'i-accept-unsafe-defaults=true';
/** The handler of a function: functions/handlers/<name>, but for the example SQS consumer in examples/. */
const handlerOf = (name: string) => (name === 'sqsConsumer' ? 'examples/sqs-consumer/handler.handler' : `functions/handlers/${name}.handler`);
/** The bundle a function's zip holds its handler in. */
const bundleOf = (name: string) => `${handlerOf(name).replace(/\.handler$/, '')}.mjs`;
const DOMAIN_URL = 'https://search-locks-abc.eu-west-1.es.amazonaws.com';
const DOMAIN_ARN = 'arn:aws:es:eu-west-1:123456789012:domain/locks';
/** A managed domain in a VPC (infra/vpc.cjs takes ids of the real form: subnet-/sg- and 8 to 17 hex digits). */
const OPENSEARCH_PARAMS = [
  'lockStore=opensearch',
  `openSearchUrl=${DOMAIN_URL}`,
  `openSearchDomainArn=${DOMAIN_ARN}`,
  'vpcSubnetIds=subnet-0a1b2c3d,subnet-4e5f6a7b',
  'vpcSecurityGroupIds=sg-0123abcd',
];
/** A namespace policy and limits for prod (the dev package keeps the defaults: no policy, no quota). */
const PROD_POLICY = {
  allow: [
    { principals: ['arn:aws:iam::123456789012:role/orders-pipeline'], actions: ['acquire', 'inspect'], namespaces: ['orders', 'orders-*'] },
    { principals: ['direct'], actions: ['acquire'], namespaces: ['jobs'] },
  ],
};
const PROD_LIMITS = { maxIdsPerRequest: '100', maxWaitMs: '5000', ttlMaxMs: '120000', maxLocksPerOwner: '50', maxLocksPerNamespace: '500' };
/** Where prod's alarms go, and the state machines, queues and buses its lock functions may wake waiters on (dev sets none). */
const ALARM_TOPIC = 'arn:aws:sns:eu-west-1:123456789012:locks-alarms';
const WAKE_TARGETS = {
  wakeStateMachineArns: ['arn:aws:states:eu-west-1:123456789012:stateMachine:orders-*'],
  wakeQueueArns: ['arn:aws:sqs:eu-west-1:123456789012:lock-waiters.fifo', 'arn:aws:sqs:eu-west-1:123456789012:batch-waiters'],
  wakeEventBusArns: ['arn:aws:events:eu-west-1:123456789012:event-bus/locks'],
};
const work = mkdtempSync(join(tmpdir(), 'sls-package-'));
type Template = {
  Resources: Record<string, { Type: string; Properties: any; DependsOn?: unknown; Condition?: string }>;
  Conditions?: Record<string, any>;
  Outputs?: Record<string, unknown>;
};
const packaged: Record<string, { dir: string; template: Template }> = {};

/** Packages a stage with params; `variant` names the result when one stage is packaged more than once. */
async function slsPackage(stage: string, params: string[] = [], variant = stage): Promise<void> {
  const dir = join(work, variant);
  const workFolder = `.esbuild/package-test-${process.pid}-${variant}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ES_URL: 'https://es.example.com:9243',
    SLS_ESBUILD_WORK_FOLDER: workFolder,
    SLS_TELEMETRY_DISABLED: '1',
    AWS_CONFIG_FILE: '/nonexistent',
    AWS_SHARED_CREDENTIALS_FILE: '/nonexistent',
  };
  for (const name of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_PROFILE']) delete env[name];
  // The store's params fall back on these variables: only the params given here may choose the store.
  for (const name of ['LOCK_STORE', 'OPENSEARCH_URL', 'OPENSEARCH_AUTH']) delete env[name];
  try {
    await run(
      process.execPath,
      [join(ROOT, 'node_modules/osls/bin/serverless.js'), 'package', '--stage', stage, '--package', dir, ...params.map((param) => `--param=${param}`)],
      {
        cwd: ROOT,
        env,
        maxBuffer: 16 * 1024 * 1024,
      },
    ).catch((error: { stdout?: string; stderr?: string; message: string }) => {
      throw new Error(`serverless package --stage ${stage} failed:\n${error.stdout ?? ''}\n${error.stderr ?? ''}`);
    });
  } finally {
    rmSync(join(ROOT, workFolder), { recursive: true, force: true });
  }
  packaged[variant] = { dir, template: JSON.parse(readFileSync(join(dir, 'cloudformation-template-update-stack.json'), 'utf8')) as Template };
}

let refusals = 0;
/** Packages a stage that must be refused, and answers what serverless printed (the refusal among it). */
async function slsPackageRefused(stage: string, params: string[]): Promise<string> {
  const variant = `refused-${stage}-${refusals++}`;
  const outcome = await slsPackage(stage, params, variant).then(
    () => undefined,
    (error: Error) => error.message,
  );
  if (outcome === undefined) throw new Error(`serverless package --stage ${stage} ${params.join(' ')} packaged; it should have been refused`);
  return outcome;
}

beforeAll(async () => {
  // One after the other: serverless-esbuild stages its zips in the service's own .serverless/ folder.
  // dev with the examples; prod and the OpenSearch package (stage dev) without: the default.
  await slsPackage('dev', ['examples=true']);
  await slsPackage('prod', [
    'sweepRate=rate(5 minutes)',
    'vpcSubnetIds=subnet-0a1b2c3d,subnet-4e5f6a7b',
    'vpcSecurityGroupIds=sg-0123abcd',
    `lockPolicy=${JSON.stringify(PROD_POLICY)}`,
    ...Object.entries(PROD_LIMITS).map(([name, value]) => `${name}=${value}`),
    `alarmTopicArn=${ALARM_TOPIC}`,
    'leasesRunOutAlarmThreshold=25',
    ...Object.entries(WAKE_TARGETS).map(([name, arns]) => `${name}=${arns.join(',')}`),
  ]);
  await slsPackage('dev', OPENSEARCH_PARAMS, 'opensearch');
  // Every unsafe setting at once, accepted by name in a stage that is neither local nor production.
  await slsPackage('staging', [...Object.values(UNSAFE).flat(), ACCEPT_UNSAFE], 'unsafe');
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

const resourcesOf = (template: Template, type: string) => Object.entries(template.Resources).filter(([, resource]) => resource.Type === type);
const logicalId = (name: string) => `${name[0]!.toUpperCase()}${name.slice(1)}LambdaFunction`;

describe('serverless package', () => {
  it('bundles for the runtime it deploys: esbuild targets node24', () => {
    const config = readFileSync('serverless.yml', 'utf8');
    expect(config).toMatch(/^\s+runtime: nodejs24\.x$/m);
    expect(config).toMatch(/^\s+target: node24$/m);
    expect(config).not.toMatch(/nodejs20|node20/);
  });

  it('declares every function on nodejs24.x (Lambda refuses new nodejs20.x functions) with the Elasticsearch timeout below the function timeout', () => {
    const { template } = packaged.dev!;
    expect(resourcesOf(template, 'AWS::Lambda::Function')).toHaveLength(FUNCTIONS.length);
    for (const name of FUNCTIONS) {
      const fn = template.Resources[logicalId(name)]!.Properties;
      expect(fn.Runtime).toBe('nodejs24.x');
      expect(fn.Handler).toBe(handlerOf(name));
      const env = fn.Environment.Variables as Record<string, string>;
      expect(env.ES_URL).toBe('https://es.example.com:9243');
      expect(Number(env.FUNCTION_TIMEOUT_MS)).toBe(fn.Timeout * 1000);
      expect(Number(env.ES_REQUEST_TIMEOUT_MS)).toBeLessThan(fn.Timeout * 1000 - 1000);
      expect(env.ES_API_KEY_PARAMETER).toBe('/es-lease-locks/dev/es-api-key');
      expect(env.POWERTOOLS_SERVICE_NAME).toBe('es-lease-locks');
    }
    expect(template.Resources.AcquireLambdaFunction!.Properties.Timeout).toBeLessThan(30);
  });

  it('never lets a deployed function create the lock index: LOCK_ENSURE_INDEX is false in the default stage and prod', () => {
    // A deleted lock index re-created by the next cold start would be an incarnation nobody asked for;
    // it stays missing (StoreRejectedError naming `npm run index:create`) until an operator makes it.
    for (const stage of ['dev', 'prod']) {
      const functions = resourcesOf(packaged[stage]!.template, 'AWS::Lambda::Function');
      expect(functions).toHaveLength(stage === 'dev' ? FUNCTIONS.length : LOCK_FUNCTIONS.length);
      for (const [name, resource] of functions) expect(resource.Properties.Environment.Variables.LOCK_ENSURE_INDEX, `${stage} ${name}`).toBe('false');
    }
  });

  it('routes the HTTP API exactly as the OpenAPI document says, each to its function', () => {
    const { template } = packaged.dev!;
    const routes = resourcesOf(template, 'AWS::ApiGatewayV2::Route').map(([, route]) => {
      const integration = (route.Properties.Target['Fn::Join'][1][1] as { Ref: string }).Ref;
      const target = template.Resources[integration]!.Properties.IntegrationUri['Fn::GetAtt'][0] as string;
      return `${route.Properties.RouteKey} -> ${target}`;
    });
    expect(routes.sort()).toEqual(
      [
        'GET /health -> HealthLambdaFunction',
        'GET /inspect -> InspectLambdaFunction',
        'GET /locks -> ListLambdaFunction',
        'GET /status -> StatusLambdaFunction',
        'POST /acquire -> AcquireLambdaFunction',
        'POST /drain -> DrainLambdaFunction',
        'POST /revoke -> RevokeLambdaFunction',
        'POST /release -> ReleaseLambdaFunction',
        'POST /renew -> RenewLambdaFunction',
      ].sort(),
    );
    const documented = Object.entries(openapi.paths).flatMap(([path, operations]) =>
      Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(routes.map((route) => route.split(' -> ')[0]).sort()).toEqual(documented.sort());
    expect(resourcesOf(template, 'AWS::ApiGatewayV2::Integration').every(([, integration]) => integration.Properties.PayloadFormatVersion === '2.0')).toBe(
      true,
    );
  });

  it('schedules the sweeper at the stage parameter rate', () => {
    const rule = (stage: string) => resourcesOf(packaged[stage]!.template, 'AWS::Events::Rule').map(([, resource]) => resource.Properties);
    expect(rule('dev')).toEqual([expect.objectContaining({ ScheduleExpression: 'rate(1 minute)', State: 'ENABLED' })]);
    expect(rule('dev')[0].Targets[0].Arn['Fn::GetAtt'][0]).toBe('SweeperLambdaFunction');
    expect(rule('prod')).toEqual([expect.objectContaining({ ScheduleExpression: 'rate(5 minutes)' })]);
  });

  it('runs the functions in a VPC when the vpc params are set, and outside one when they are not', () => {
    for (const [name, resource] of resourcesOf(packaged.prod!.template, 'AWS::Lambda::Function')) {
      expect(resource.Properties.VpcConfig, name).toEqual({ SubnetIds: ['subnet-0a1b2c3d', 'subnet-4e5f6a7b'], SecurityGroupIds: ['sg-0123abcd'] });
    }
    const role = resourcesOf(packaged.prod!.template, 'AWS::IAM::Role')[0]![1];
    expect(JSON.stringify(role.Properties.ManagedPolicyArns)).toContain('AWSLambdaVPCAccessExecutionRole');
    for (const [name, resource] of resourcesOf(packaged.dev!.template, 'AWS::Lambda::Function')) expect(resource.Properties.VpcConfig, name).toBeUndefined();
  });

  it('wires the SQS consumer to its queue: batches of 10, partial batch responses, a dead-letter queue, a visibility timeout above the function timeout', () => {
    const { template } = packaged.dev!;
    const mappings = resourcesOf(template, 'AWS::Lambda::EventSourceMapping').map(([, resource]) => resource.Properties);
    expect(mappings).toEqual([
      expect.objectContaining({
        EventSourceArn: { 'Fn::GetAtt': ['LockedWorkQueue', 'Arn'] },
        FunctionName: { 'Fn::GetAtt': ['SqsConsumerLambdaFunction', 'Arn'] },
        BatchSize: 10,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        Enabled: true,
      }),
    ]);
    const queues = Object.fromEntries(resourcesOf(template, 'AWS::SQS::Queue'));
    expect(Object.keys(queues).sort()).toEqual(['LockedWorkDeadLetterQueue', 'LockedWorkQueue']);
    const queue = queues.LockedWorkQueue!.Properties;
    expect(queue.RedrivePolicy).toEqual({ deadLetterTargetArn: { 'Fn::GetAtt': ['LockedWorkDeadLetterQueue', 'Arn'] }, maxReceiveCount: 5 });
    const consumer = template.Resources.SqsConsumerLambdaFunction!.Properties;
    expect(queue.VisibilityTimeout).toBeGreaterThanOrEqual(6 * consumer.Timeout);
    // Records wait for their locks within what the function timeout leaves.
    const env = consumer.Environment.Variables as Record<string, string>;
    expect(Number(env.RECORD_LOCK_WAIT_MS)).toBeLessThanOrEqual(consumer.Timeout * 1000 - 2 * Number(env.ES_REQUEST_TIMEOUT_MS) - 1000);
    expect(env.WORK_INDEX).toBe('locked-work');
  });

  it('every deployed stage requires IAM (SigV4) authorization on every route, /health included, with nothing set', () => {
    for (const stage of ['dev', 'prod', 'opensearch']) {
      const routes = resourcesOf(packaged[stage]!.template, 'AWS::ApiGatewayV2::Route');
      expect(routes, stage).toHaveLength(6);
      for (const [name, route] of routes) expect(route.Properties.AuthorizationType, `${stage} ${name}`).toBe('AWS_IAM');
    }
  });

  it('passes the namespace policy and the limits to every function; without them no policy (every lock call refused) and no quota', () => {
    for (const [name, resource] of resourcesOf(packaged.prod!.template, 'AWS::Lambda::Function')) {
      const env = resource.Properties.Environment.Variables as Record<string, string>;
      expect(JSON.parse(env.LOCK_POLICY!), name).toEqual(PROD_POLICY);
      expect(env, name).toMatchObject({
        LOCK_POLICY_PARAMETER: '',
        LOCK_MAX_IDS_PER_REQUEST: '100',
        LOCK_MAX_WAIT_MS: '5000',
        LOCK_TTL_MAX_MS: '120000',
        LOCK_MAX_LOCKS_PER_OWNER: '50',
        LOCK_MAX_LOCKS_PER_NAMESPACE: '500',
      });
      // What the functions make of it at cold start: the policy parses, the limits are read.
      const config = readConfig(env);
      expect(config.policy.kind, name).toBe('statements');
      expect(config).toMatchObject({ maxIdsPerRequest: 100, quota: { perOwner: 50, perNamespace: 500 }, ttl: { maxMs: 120_000 } });
    }
    for (const [name, resource] of resourcesOf(packaged.dev!.template, 'AWS::Lambda::Function')) {
      const env = resource.Properties.Environment.Variables as Record<string, string>;
      expect(env, name).toMatchObject({ LOCK_POLICY: '', LOCK_POLICY_PARAMETER: '', LOCK_MAX_LOCKS_PER_OWNER: '', LOCK_MAX_LOCKS_PER_NAMESPACE: '' });
      expect(readConfig(env), name).toMatchObject({ policy: { kind: 'none' }, quota: {}, maxIdsPerRequest: 500 });
    }
  });

  it("grants least privilege: logs, X-Ray, and only this stage's own parameters and secrets", () => {
    const role = packaged.dev!.template.Resources.IamRoleLambdaExecution!.Properties;
    const statements = role.Policies[0].PolicyDocument.Statement as Array<{ Action: string[]; Resource: unknown[] }>;
    const actions = statements.flatMap((statement) => statement.Action).sort();
    expect(actions).toEqual(
      [
        'logs:CreateLogGroup',
        'logs:CreateLogStream',
        'logs:PutLogEvents',
        'logs:TagResource',
        'secretsmanager:GetSecretValue',
        'sqs:DeleteMessage',
        'sqs:GetQueueAttributes',
        'sqs:ReceiveMessage',
        'ssm:GetParameter',
        'xray:PutTelemetryRecords',
        'xray:PutTraceSegments',
      ].sort(),
    );
    for (const statement of statements) {
      const text = JSON.stringify(statement.Resource);
      if (statement.Action.some((action) => action.startsWith('xray:'))) continue;
      expect(text).not.toBe('["*"]');
      if (statement.Action.some((action) => action.startsWith('ssm:') || action.startsWith('secretsmanager:'))) expect(text).toContain('es-lease-locks/dev/*');
      // The consumer reads and deletes messages of its own queue only.
      if (statement.Action.some((action) => action.startsWith('sqs:'))) expect(statement.Resource).toEqual([{ 'Fn::GetAtt': ['LockedWorkQueue', 'Arn'] }]);
    }
    expect(role.ManagedPolicyArns ?? []).toEqual([]);
  });

  it('packages each function alone: one small ESM bundle (and its lazy chunks), no node_modules', async () => {
    const { dir } = packaged.dev!;
    const zips = readdirSync(dir).filter((file) => file.endsWith('.zip'));
    expect(zips.sort()).toEqual(FUNCTIONS.map((name) => `${name}.zip`).sort());
    for (const zip of zips) {
      expect(statSync(join(dir, zip)).size, zip).toBeLessThan(1_000_000);
      const { stdout } = await run('unzip', ['-Z1', join(dir, zip)]);
      const entries = stdout.trim().split('\n');
      // The handler, plus the chunks esbuild splits off (the SSM / Secrets Manager code is loaded only when configured).
      const bundle = bundleOf(zip.replace('.zip', ''));
      expect(entries, zip).toContain(bundle);
      for (const entry of entries) expect(entry, zip).toMatch(new RegExp(`^${bundle.slice(0, bundle.lastIndexOf('/'))}/[\\w-]+\\.mjs$`));
    }
  });

  it('every bundle loads in a fresh Node process without the AWS SDK and exports an async (event, context) handler', async () => {
    // Lambda's nodejs24.x runtime refuses callback-style handlers, (event, context, callback): each
    // handler must be an async function of at most two parameters, whatever the wrapper around it.
    const { dir } = packaged.dev!;
    const out = join(work, 'unzipped');
    for (const name of FUNCTIONS) {
      await run('unzip', ['-q', '-o', join(dir, `${name}.zip`), '-d', out]);
      const probe = `const m = await import(${JSON.stringify(join(out, bundleOf(name)))}); console.log(typeof m.handler, m.handler.constructor.name, m.handler.length);`;
      const { stdout } = await run(process.execPath, ['--input-type=module', '-e', probe], {
        env: { PATH: process.env.PATH, ES_URL: 'http://127.0.0.1:9', POWERTOOLS_TRACE_ENABLED: 'false' },
        cwd: tmpdir(),
      });
      const [type, constructorName, arity] = stdout.trim().split(' ');
      expect([type, constructorName], name).toEqual(['function', 'AsyncFunction']);
      expect(Number(arity), name).toBeLessThanOrEqual(2);
    }
  });

  it('loads those bundles on the Node.js major the functions deploy on (nodejs24.x)', () => {
    const major = Number(process.versions.node.split('.')[0]);
    expect(major, `tests run on Node.js ${process.version}; put Node.js 24 first on PATH (. scripts/node24.sh)`).toBe(24);
  });
});

describe('serverless package for Amazon OpenSearch Service (lockStore=opensearch)', () => {
  type Statement = { Effect: string; Action: string[]; Resource: unknown[] };
  const statementsOf = (variant: string) =>
    packaged[variant]!.template.Resources.IamRoleLambdaExecution!.Properties.Policies[0].PolicyDocument.Statement as Statement[];
  const functionsOf = (variant: string) => resourcesOf(packaged[variant]!.template, 'AWS::Lambda::Function');

  it('points every function at the domain, signing with its role: LOCK_STORE, OPENSEARCH_URL, OPENSEARCH_AUTH=sigv4', () => {
    const functions = functionsOf('opensearch');
    expect(functions).toHaveLength(LOCK_FUNCTIONS.length);
    for (const [name, resource] of functions) {
      expect(resource.Properties.Environment.Variables, name).toMatchObject({ LOCK_STORE: 'opensearch', OPENSEARCH_URL: DOMAIN_URL, OPENSEARCH_AUTH: 'sigv4' });
    }
  });

  it("runs the functions in the domain's VPC", () => {
    for (const [name, resource] of functionsOf('opensearch')) {
      expect(resource.Properties.VpcConfig, name).toEqual({ SubnetIds: ['subnet-0a1b2c3d', 'subnet-4e5f6a7b'], SecurityGroupIds: ['sg-0123abcd'] });
    }
  });

  it('lets the role call that domain alone, over HTTP: es:ESHttp* on the domain ARN and everything below it', () => {
    const domain = statementsOf('opensearch').filter((statement) => statement.Action.some((action) => action.startsWith('es:')));
    expect(domain).toEqual([
      {
        Effect: 'Allow',
        Action: ['es:ESHttpGet', 'es:ESHttpPut', 'es:ESHttpPost', 'es:ESHttpDelete', 'es:ESHttpHead'],
        Resource: [DOMAIN_ARN, `${DOMAIN_ARN}/*`],
      },
    ]);
    // The stage's own statements stay as they are (the dev package's but the example consumer's sqs:*: it has the examples).
    const others = statementsOf('opensearch').filter((statement) => !statement.Action.some((action) => action.startsWith('es:')));
    expect(others).toEqual(statementsOf('dev').filter((statement) => !statement.Action.some((action) => action.startsWith('sqs:'))));
  });

  /** Runs one of serverless.yml's `${file(./infra/….cjs)}` resolvers as the framework would, over these params. */
  const resolve = (file: string, stage: string, params: Record<string, string>) => {
    const resolver = createRequire(import.meta.url)(join(ROOT, 'infra', file)) as (options: {
      resolveVariable: (expression: string) => Promise<unknown>;
    }) => Promise<unknown>;
    return resolver({
      resolveVariable: async (expression) => {
        const [source, fallback = "''"] = expression.split(', ');
        if (source === 'sls:stage') return stage;
        if (source === 'self:custom.iamStatements') return [];
        return params[source!.replace('param:', '')] ?? fallback.slice(1, -1);
      },
    });
  };

  it('refuses to package any stage but local on OpenSearch unless every request is signed (openSearchAuth sigv4, the default) or the unsafe setting is accepted by name', async () => {
    const prod = { lockStore: 'opensearch', openSearchUrl: DOMAIN_URL };
    const accept = { 'i-accept-unsafe-defaults': 'true' };
    await expect(resolve('opensearch-auth.cjs', 'prod', { ...prod, openSearchAuth: 'sigv4' })).resolves.toBe('sigv4');
    for (const stage of ['prod', 'production', 'dev']) {
      await expect(resolve('opensearch-auth.cjs', stage, { ...prod, openSearchAuth: 'none' }), stage).rejects.toThrow(
        new RegExp(`^param openSearchAuth: none \\(not sigv4\\) with lockStore opensearch is refused in the ${stage} stage`),
      );
      await expect(resolve('opensearch-auth.cjs', stage, { ...prod, openSearchAuth: '' }), stage).rejects.toThrow(
        /^param openSearchAuth: nothing \(not sigv4\)/,
      );
    }
    // Another stage may go unsigned (a self-managed cluster) when it says so by name; local may, and may leave it to the functions (empty: sign for amazonaws.com hosts).
    await expect(resolve('opensearch-auth.cjs', 'dev', { ...prod, openSearchAuth: 'none' })).rejects.toThrow(/or pass --param="i-accept-unsafe-defaults=true"/);
    await expect(resolve('opensearch-auth.cjs', 'dev', { ...prod, openSearchAuth: 'none', ...accept })).resolves.toBe('none');
    await expect(resolve('opensearch-auth.cjs', 'prod', { ...prod, openSearchAuth: 'none', ...accept })).rejects.toThrow(
      /^param i-accept-unsafe-defaults: refused in the prod stage/,
    );
    await expect(resolve('opensearch-auth.cjs', 'local', prod)).resolves.toBe('');
    await expect(resolve('opensearch-auth.cjs', 'dev', { ...prod, openSearchAuth: 'iam' })).rejects.toThrow(/^param openSearchAuth: must be sigv4 or none/);
    await expect(resolve('opensearch-auth.cjs', 'dev', { lockStore: 'dynamodb' })).rejects.toThrow(/^param lockStore: must be elasticsearch or opensearch/);
  });

  it('refuses a domain ARN that is not one, or one for an Elasticsearch stage', async () => {
    await expect(
      resolve('opensearch-iam.cjs', 'dev', { lockStore: 'opensearch', openSearchDomainArn: 'arn:aws:es:eu-west-1:123456789012:locks' }),
    ).rejects.toThrow(/^param openSearchDomainArn: .* is not a domain ARN/);
    await expect(resolve('opensearch-iam.cjs', 'dev', { openSearchDomainArn: DOMAIN_ARN })).rejects.toThrow(
      /^param openSearchDomainArn: set, but lockStore is elasticsearch/,
    );
    await expect(resolve('opensearch-iam.cjs', 'dev', { lockStore: 'opensearch' })).resolves.toEqual([]);
  });

  it('grants nothing on any domain, and passes no OpenSearch settings, without the OpenSearch params', () => {
    for (const variant of ['dev', 'prod']) {
      const actions = statementsOf(variant).flatMap((statement) => statement.Action);
      expect(
        actions.filter((action) => action.startsWith('es:')),
        variant,
      ).toEqual([]);
      for (const [name, resource] of functionsOf(variant)) {
        expect(resource.Properties.Environment.Variables, `${variant} ${name}`).toMatchObject({
          LOCK_STORE: 'elasticsearch',
          OPENSEARCH_URL: '',
          OPENSEARCH_AUTH: '',
        });
      }
    }
  });
});

describe('package-time checks of authorization (infra/http-authorization.cjs, infra/lock-policy.cjs)', () => {
  /** Runs a `${file(./infra/….cjs)}` resolver as the framework would, over these params (a param may be a YAML map). */
  const resolve = (file: string, stage: string, params: Record<string, unknown>) => {
    const resolver = createRequire(import.meta.url)(join(ROOT, 'infra', file)) as (options: {
      resolveVariable: (expression: string) => Promise<unknown>;
    }) => Promise<unknown>;
    return resolver({
      resolveVariable: async (expression) => {
        const [source, fallback = "''"] = expression.split(', ');
        if (source === 'sls:stage') return stage;
        return params[source!.replace('param:', '')] ?? fallback.slice(1, -1);
      },
    });
  };

  it('AWS_IAM unless local, or another stage but prod and production accepting the unsafe setting by name, asks for NONE; anything else refused', async () => {
    const accept = { 'i-accept-unsafe-defaults': 'true' };
    await expect(resolve('http-authorization.cjs', 'dev', {})).resolves.toBe('AWS_IAM');
    await expect(resolve('http-authorization.cjs', 'prod', {})).resolves.toBe('AWS_IAM');
    await expect(resolve('http-authorization.cjs', 'local', { httpAuthorizationType: 'NONE' })).resolves.toBe('NONE');
    for (const stage of ['dev', 'staging', 'prod', 'production']) {
      await expect(resolve('http-authorization.cjs', stage, { httpAuthorizationType: 'NONE' }), stage).rejects.toThrow(
        new RegExp(`^param httpAuthorizationType: NONE is refused in the ${stage} stage \\(API Gateway names no caller`),
      );
    }
    await expect(resolve('http-authorization.cjs', 'dev', { httpAuthorizationType: 'NONE', ...accept })).resolves.toBe('NONE');
    // The param is refused in prod and production (any letter case) whatever else is set; its value is true or false.
    for (const stage of ['prod', 'production', 'PROD', 'Production']) {
      await expect(resolve('http-authorization.cjs', stage, { httpAuthorizationType: 'NONE', ...accept }), stage).rejects.toThrow(
        new RegExp(`^param i-accept-unsafe-defaults: refused in the ${stage} stage`),
      );
      await expect(resolve('http-authorization.cjs', stage, accept), stage).rejects.toThrow(/^param i-accept-unsafe-defaults: refused/);
    }
    await expect(resolve('http-authorization.cjs', 'prod', { 'i-accept-unsafe-defaults': 'false' })).resolves.toBe('AWS_IAM');
    await expect(resolve('http-authorization.cjs', 'dev', { 'i-accept-unsafe-defaults': 'yes' })).rejects.toThrow(
      /^param i-accept-unsafe-defaults: must be true or false \(got yes\)/,
    );
    // The refusal is one line, naming the param that would accept it (but in prod and production, where nothing would).
    const refusal = await resolve('http-authorization.cjs', 'dev', { httpAuthorizationType: 'NONE' }).catch((error: Error) => error.message);
    expect(refusal).not.toContain('\n');
    expect(refusal).toMatch(/set AWS_IAM, or pass --param="i-accept-unsafe-defaults=true" to accept it \(refused in prod and production\)$/);
    const prodRefusal = await resolve('http-authorization.cjs', 'prod', { httpAuthorizationType: 'NONE' }).catch((error: Error) => error.message);
    expect(prodRefusal).toMatch(/; set AWS_IAM$/);
    await expect(resolve('http-authorization.cjs', 'dev', { httpAuthorizationType: 'JWT' })).rejects.toThrow(
      /^param httpAuthorizationType: must be AWS_IAM or NONE/,
    );
  });

  it('the policy as compact JSON, from JSON text or a YAML map; empty stays empty (no policy); allow-all in local, elsewhere only accepted by name and never in prod or production', async () => {
    await expect(resolve('lock-policy.cjs', 'dev', {})).resolves.toBe('');
    await expect(resolve('lock-policy.cjs', 'dev', { lockPolicy: JSON.stringify(PROD_POLICY, null, 2) })).resolves.toBe(JSON.stringify(PROD_POLICY));
    await expect(resolve('lock-policy.cjs', 'prod', { lockPolicy: PROD_POLICY })).resolves.toBe(JSON.stringify(PROD_POLICY));
    await expect(resolve('lock-policy.cjs', 'local', { lockPolicy: 'allow-all' })).resolves.toBe('allow-all');
    for (const stage of ['dev', 'prod', 'production']) {
      await expect(resolve('lock-policy.cjs', stage, { lockPolicy: 'allow-all' }), stage).rejects.toThrow(
        new RegExp(`^param lockPolicy: allow-all is refused in the ${stage} stage \\(no authorization`),
      );
    }
    await expect(resolve('lock-policy.cjs', 'dev', { lockPolicy: 'allow-all', 'i-accept-unsafe-defaults': 'true' })).resolves.toBe('allow-all');
    await expect(resolve('lock-policy.cjs', 'production', { lockPolicy: 'allow-all', 'i-accept-unsafe-defaults': 'true' })).rejects.toThrow(
      /^param i-accept-unsafe-defaults: refused in the production stage/,
    );
  });

  it('refuses a policy that is not JSON or has no allow list, one too large for the environment, both params, and a parameter the role may not read', async () => {
    await expect(resolve('lock-policy.cjs', 'dev', { lockPolicy: '{"allow": [' })).rejects.toThrow(/^param lockPolicy: must be JSON/);
    await expect(resolve('lock-policy.cjs', 'dev', { lockPolicy: '[]' })).rejects.toThrow(/^param lockPolicy: must be an object with an "allow" list/);
    const huge = {
      allow: Array.from({ length: 60 }, (_, index) => ({
        principals: [`arn:aws:iam::123456789012:role/pipeline-${index}`],
        actions: ['acquire'],
        namespaces: ['x'],
      })),
    };
    await expect(resolve('lock-policy.cjs', 'dev', { lockPolicy: huge })).rejects.toThrow(/more than 3000 .* set lockPolicyParameter/);
    await expect(resolve('lock-policy.cjs', 'dev', { lockPolicy: 'allow-all', lockPolicyParameter: '/es-lease-locks/dev/lock-policy' })).rejects.toThrow(
      /^params lockPolicy and lockPolicyParameter: both are set/,
    );
    await expect(resolve('lock-policy.cjs', 'prod', { lockPolicyParameter: '/es-lease-locks/prod/lock-policy' })).resolves.toBe('');
    await expect(resolve('lock-policy.cjs', 'prod', { lockPolicyParameter: '/shared/lock-policy' })).rejects.toThrow(
      /^param lockPolicyParameter: \/shared\/lock-policy is outside \/es-lease-locks\/prod\//,
    );
  });
});

describe('alarms and the wake-up grants (serverless.yml, infra/alarms.cjs, infra/wake-iam.cjs)', () => {
  type Statement = { Effect: string; Action: string[]; Resource: unknown[] };
  const statementsOf = (variant: string) =>
    packaged[variant]!.template.Resources.IamRoleLambdaExecution!.Properties.Policies[0].PolicyDocument.Statement as Statement[];
  const alarmsOf = (variant: string) => Object.fromEntries(resourcesOf(packaged[variant]!.template, 'AWS::CloudWatch::Alarm'));
  /** Whether CloudFormation creates a resource: its Condition, evaluated as CloudFormation would (these conditions compare two strings). */
  const created = (variant: string, logicalId: string): boolean => {
    const { template } = packaged[variant]!;
    const condition = template.Resources[logicalId]!.Condition;
    if (!condition) return true;
    const [left, right] = template.Conditions![condition]['Fn::Not'][0]['Fn::Equals'];
    return left !== right;
  };
  const WAKE_ACTIONS = ['states:SendTaskSuccess', 'states:SendTaskFailure', 'sqs:SendMessage', 'events:PutEvents'];

  it('alarms on sweeper failures: AWS/Lambda Errors of the sweeper, Sum >= 1 in 2 of 3 five-minute periods, no data is no failure', () => {
    for (const variant of ['dev', 'prod']) {
      expect(alarmsOf(variant).SweeperErrorsAlarm!.Properties, variant).toMatchObject({
        Namespace: 'AWS/Lambda',
        MetricName: 'Errors',
        Dimensions: [{ Name: 'FunctionName', Value: { Ref: 'SweeperLambdaFunction' } }],
        Statistic: 'Sum',
        Period: 300,
        EvaluationPeriods: 3,
        DatapointsToAlarm: 2,
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'notBreaching',
      });
    }
  });

  it("alarms on the dead-letter queue's depth: any visible message in LockedWorkDeadLetterQueue", () => {
    expect(alarmsOf('dev').DeadLetterQueueDepthAlarm!.Properties).toMatchObject({
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': ['LockedWorkDeadLetterQueue', 'QueueName'] } }],
      Statistic: 'Maximum',
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      TreatMissingData: 'notBreaching',
    });
  });

  it("alarms on failed wake-ups: the WakeDeliveryFailures EMF metric in the functions' namespace, under the service dimension alone (as the notifier emits it)", () => {
    const dev = packaged.dev!.template;
    const env = dev.Resources.SweeperLambdaFunction!.Properties.Environment.Variables as Record<string, string>;
    expect(alarmsOf('dev').WakeDeliveryFailuresAlarm!.Properties).toMatchObject({
      Namespace: env.POWERTOOLS_METRICS_NAMESPACE,
      MetricName: 'WakeDeliveryFailures',
      Dimensions: [{ Name: 'service', Value: env.POWERTOOLS_SERVICE_NAME }],
      Statistic: 'Sum',
      EvaluationPeriods: 3,
      DatapointsToAlarm: 2,
      Threshold: 1,
      TreatMissingData: 'notBreaching',
    });
  });

  it('alarms on leases that ran out unreleased only with leasesRunOutAlarmThreshold set, on the sweep dimensions the sweeper emits', () => {
    expect(created('dev', 'LeasesRunOutAlarm')).toBe(false);
    expect(created('prod', 'LeasesRunOutAlarm')).toBe(true);
    const env = packaged.prod!.template.Resources.SweeperLambdaFunction!.Properties.Environment.Variables as Record<string, string>;
    expect(alarmsOf('prod').LeasesRunOutAlarm!.Properties).toMatchObject({
      Namespace: env.POWERTOOLS_METRICS_NAMESPACE,
      MetricName: 'LeasesRunOut',
      Dimensions: [
        { Name: 'service', Value: env.POWERTOOLS_SERVICE_NAME },
        { Name: 'operation', Value: 'sweep' },
        { Name: 'granularity', Value: 'all' },
      ],
      Statistic: 'Sum',
      Threshold: 25,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
    for (const id of ['SweeperErrorsAlarm', 'DeadLetterQueueDepthAlarm', 'WakeDeliveryFailuresAlarm']) expect(created('dev', id), id).toBe(true);
  });

  it('notifies alarmTopicArn on ALARM and OK when it is set; without it, no actions', () => {
    for (const [name, alarm] of Object.entries(alarmsOf('prod'))) {
      expect(alarm.Properties, name).toMatchObject({ AlarmActions: [ALARM_TOPIC], OKActions: [ALARM_TOPIC] });
      expect(alarm.Properties.AlarmName, name).toMatch(/^es-lease-locks-prod-/);
    }
    for (const [name, alarm] of Object.entries(alarmsOf('dev'))) expect(alarm.Properties, name).toMatchObject({ AlarmActions: [], OKActions: [] });
  });

  it('grants wake-ups on exactly the state machines, queues and buses the wake* params list, and none without them', () => {
    // The framework writes a one-ARN Resource as a string.
    const wake = (variant: string) =>
      statementsOf(variant)
        .filter((statement) => statement.Action.some((action) => WAKE_ACTIONS.includes(action)))
        .map((statement) => ({ ...statement, Resource: [statement.Resource].flat() }));
    expect(wake('dev')).toEqual([]);
    expect(wake('prod')).toEqual([
      { Effect: 'Allow', Action: ['states:SendTaskSuccess', 'states:SendTaskFailure'], Resource: WAKE_TARGETS.wakeStateMachineArns },
      { Effect: 'Allow', Action: ['sqs:SendMessage'], Resource: WAKE_TARGETS.wakeQueueArns },
      { Effect: 'Allow', Action: ['events:PutEvents'], Resource: WAKE_TARGETS.wakeEventBusArns },
    ]);
  });

  /** Runs a `${file(./infra/….cjs)}` resolver (or one of its exports) as the framework would, over these params. */
  const resolve = (file: string, params: Record<string, string>, exported?: string) => {
    const loaded = createRequire(import.meta.url)(join(ROOT, 'infra', file)) as Record<string, unknown> & ((options: unknown) => Promise<unknown>);
    const resolver = (exported ? loaded[exported] : loaded) as (options: { resolveVariable: (expression: string) => Promise<unknown> }) => Promise<unknown>;
    return resolver({
      resolveVariable: async (expression) => {
        const [source, fallback = "''"] = expression.split(', ');
        return params[source!.replace('param:', '')] ?? fallback.slice(1, -1);
      },
    });
  };

  it('refuses a wake target that is not an ARN of its kind, or that opens a whole service (`*`)', async () => {
    await expect(resolve('wake-iam.cjs', { wakeStateMachineArns: '*' })).rejects.toThrow(/^param wakeStateMachineArns: \* is not of the form arn:aws:states:/);
    await expect(resolve('wake-iam.cjs', { wakeQueueArns: 'https://sqs.eu-west-1.amazonaws.com/123456789012/q' })).rejects.toThrow(/^param wakeQueueArns: /);
    await expect(resolve('wake-iam.cjs', { wakeQueueArns: 'arn:aws:sqs:*:123456789012:q' })).rejects.toThrow(/^param wakeQueueArns: /);
    await expect(resolve('wake-iam.cjs', { wakeEventBusArns: 'arn:aws:events:eu-west-1:123456789012:rule/x' })).rejects.toThrow(/^param wakeEventBusArns: /);
    await expect(resolve('wake-iam.cjs', {})).resolves.toEqual([]);
  });

  it('refuses an alarm topic that is not an SNS topic ARN, and a LeasesRunOut threshold that is not a whole number from 1', async () => {
    await expect(resolve('alarms.cjs', { alarmTopicArn: 'locks-alarms' }, 'actions')).rejects.toThrow(
      /^param alarmTopicArn: locks-alarms is not an SNS topic ARN/,
    );
    await expect(resolve('alarms.cjs', {}, 'actions')).resolves.toEqual([]);
    for (const wrong of ['0', '-1', '2.5', 'ten']) {
      await expect(resolve('alarms.cjs', { leasesRunOutAlarmThreshold: wrong }, 'leasesRunOutThreshold'), wrong).rejects.toThrow(
        /^param leasesRunOutAlarmThreshold: /,
      );
    }
    await expect(resolve('alarms.cjs', {}, 'leasesRunOutThreshold')).resolves.toBe(0);
  });
});

describe('the examples: packaged only with examples=true (serverless.yml custom.examples, infra/examples.cjs)', () => {
  const exampleResourcesOf = (variant: string) =>
    Object.keys(packaged[variant]!.template.Resources).filter((id) => id.startsWith('SqsConsumer') || EXAMPLE_RESOURCES.includes(id));

  it('a default package of a deployed stage has the lock functions alone: no SQS consumer, no queues, no dead-letter alarm, no sqs:* grant, no queue outputs', () => {
    for (const variant of ['prod', 'opensearch']) {
      const { dir, template } = packaged[variant]!;
      expect(exampleResourcesOf(variant), variant).toEqual([]);
      expect(resourcesOf(template, 'AWS::SQS::Queue'), variant).toEqual([]);
      expect(resourcesOf(template, 'AWS::Lambda::EventSourceMapping'), variant).toEqual([]);
      expect(
        resourcesOf(template, 'AWS::Lambda::Function')
          .map(([id]) => id)
          .sort(),
        variant,
      ).toEqual(LOCK_FUNCTIONS.map(logicalId).sort());
      const statements = template.Resources.IamRoleLambdaExecution!.Properties.Policies[0].PolicyDocument.Statement as Array<{ Action: string[] }>;
      expect(
        statements.flatMap((statement) => statement.Action).filter((action) => action.startsWith('sqs:')),
        variant,
      ).toEqual(variant === 'prod' ? ['sqs:SendMessage'] : []); // prod's is the wake-up grant on wakeQueueArns, not the consumer's
      expect(
        Object.keys(template.Outputs ?? {}).filter((name) => name.startsWith('LockedWork')),
        variant,
      ).toEqual([]);
      expect(
        readdirSync(dir)
          .filter((file) => file.endsWith('.zip'))
          .sort(),
        variant,
      ).toEqual(LOCK_FUNCTIONS.map((name) => `${name}.zip`).sort());
    }
  });

  it('with examples=true, the consumer, its queue, its dead-letter queue, their alarm and outputs', () => {
    const { template } = packaged.dev!;
    expect(
      exampleResourcesOf('dev')
        .filter((id) => EXAMPLE_RESOURCES.includes(id))
        .sort(),
    ).toEqual([...EXAMPLE_RESOURCES].sort());
    expect(template.Resources.SqsConsumerLambdaFunction).toBeDefined();
    expect(Object.keys(template.Outputs ?? {}).filter((name) => name.startsWith('LockedWork'))).toEqual(['LockedWorkQueueUrl', 'LockedWorkDeadLetterQueueUrl']);
  });

  it('refuses an examples param that is not true or false, and is on in the local stage', async () => {
    const examples = createRequire(import.meta.url)(join(ROOT, 'infra', 'examples.cjs')) as Record<
      string,
      (options: { resolveVariable: (expression: string) => Promise<unknown> }) => Promise<unknown>
    >;
    const resolveVariable = (value: unknown) => async (expression: string) => (expression.startsWith('param:examples') ? value : { sqsConsumer: {} });
    await expect(examples.functions!({ resolveVariable: resolveVariable('yes') })).rejects.toThrow(/^param examples: must be true or false \(got yes\)/);
    await expect(examples.functions!({ resolveVariable: resolveVariable(false) })).resolves.toEqual({});
    await expect(examples.resources!({ resolveVariable: resolveVariable('false') })).resolves.toEqual({});
    await expect(examples.functions!({ resolveVariable: resolveVariable(true) })).resolves.toEqual({ sqsConsumer: {} });
    expect(readFileSync(join(ROOT, 'serverless.yml'), 'utf8')).toMatch(/^ {2}local:\n(?: {4}.*\n)*? {4}examples: true$/m);
  });
});

describe('serverless package refuses the unsafe settings outside local (infra/unsafe.cjs)', () => {
  for (const [setting, params] of Object.entries(UNSAFE)) {
    it(`refuses ${setting} in a stage named production, with or without i-accept-unsafe-defaults`, async () => {
      const refused = await slsPackageRefused('production', params);
      expect(refused).toMatch(/is refused in the production stage \(/);
      expect(refused).not.toContain('i-accept-unsafe-defaults');
      expect(await slsPackageRefused('production', [...params, ACCEPT_UNSAFE])).toMatch(
        /param i-accept-unsafe-defaults: refused in the production stage; nothing unsafe packages there/,
      );
    });
  }

  it('refuses i-accept-unsafe-defaults in prod even with nothing unsafe set', async () => {
    expect(await slsPackageRefused('prod', [ACCEPT_UNSAFE])).toMatch(/param i-accept-unsafe-defaults: refused in the prod stage/);
  });

  it('refuses routes without IAM in any other deployed stage too, naming the param that would accept it', async () => {
    expect(await slsPackageRefused('staging', UNSAFE['routes without IAM authorization']!)).toMatch(
      /param httpAuthorizationType: NONE is refused in the staging stage \(.*\); set AWS_IAM, or pass --param="i-accept-unsafe-defaults=true" to accept it/,
    );
  });

  it('packages every unsafe setting at once in another stage with i-accept-unsafe-defaults=true, as asked', () => {
    const { template } = packaged.unsafe!;
    const routes = resourcesOf(template, 'AWS::ApiGatewayV2::Route');
    expect(routes).toHaveLength(6);
    for (const [name, route] of routes) expect(route.Properties.AuthorizationType, name).toBe('NONE');
    for (const [name, resource] of resourcesOf(template, 'AWS::Lambda::Function')) {
      expect(resource.Properties.Environment.Variables, name).toMatchObject({ LOCK_POLICY: 'allow-all', LOCK_STORE: 'opensearch', OPENSEARCH_AUTH: 'none' });
    }
  });
});
