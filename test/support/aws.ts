/**
 * Real AWS SDK v3 clients pointed at the project's AWS emulator (moto; infra/aws/), for test files
 * that need Step Functions, SQS or EventBridge. A file calls `awsEmulatorUrl()` in its beforeAll:
 * that starts the emulator the first time any file of the run asks (AWS_EMULATOR_URL names one of
 * the user's own instead), so files that never ask pay nothing. The global setup
 * (global-setup-aws.ts) stops at the end of the run an emulator that the run started.
 *
 * Names: moto keeps every resource for the life of the server, shared by all test files; give each
 * queue, bus, rule and state machine a name of its own (`uniqueName`).
 */
import { randomUUID } from 'node:crypto';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { SFNClient } from '@aws-sdk/client-sfn';
import { SQSClient } from '@aws-sdk/client-sqs';
import { resolveAwsEmulator } from '../../infra/aws/target.js';

export const EMULATOR_REGION = 'us-east-1';
/** moto's default account: what its ARNs and queue URLs carry. */
export const EMULATOR_ACCOUNT_ID = '123456789012';

/** What every client is built with: the emulator as endpoint, a fixed region, credentials moto accepts (any). */
export interface EmulatorClientConfig {
  endpoint: string;
  region: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  maxAttempts: number;
}

export function emulatorClientConfig(endpoint: string): EmulatorClientConfig {
  return { endpoint, region: EMULATOR_REGION, credentials: { accessKeyId: 'test', secretAccessKey: 'test' }, maxAttempts: 1 };
}

/** The emulator's URL, starting the project's own when AWS_EMULATOR_URL is not set and it does not run. */
export async function awsEmulatorUrl(): Promise<string> {
  return (await resolveAwsEmulator((line) => console.log(`[aws] ${line}`))).url;
}

export interface AwsClients {
  sfn: SFNClient;
  sqs: SQSClient;
  eventBridge: EventBridgeClient;
  /** Closes the three clients' connections (for afterAll). */
  destroy(): void;
}

export function awsClients(endpoint: string): AwsClients {
  const config = emulatorClientConfig(endpoint);
  const clients = { sfn: new SFNClient(config), sqs: new SQSClient(config), eventBridge: new EventBridgeClient(config) };
  return {
    ...clients,
    destroy: () => {
      for (const client of Object.values(clients)) client.destroy();
    },
  };
}

/** A resource name no other test or run has used: `${prefix}-<12 hex>` (within SQS's 80 and Step Functions' 80 characters). */
export const uniqueName = (prefix: string): string => `${prefix}-${randomUUID().replaceAll('-', '').slice(0, 12)}`;

/** A role ARN for state machines and targets: moto checks only its form. */
export const emulatorRoleArn = (name = 'emulator-role'): string => `arn:aws:iam::${EMULATOR_ACCOUNT_ID}:role/${name}`;
