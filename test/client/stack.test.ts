/**
 * The client package against the whole service on this machine: Elasticsearch and serverless-offline
 * running the bundled functions (HTTP API and Lambda invoke API), one stack for the specifications
 * below (each in specs/). Nothing is mocked: a recording proxy stands between client and stack where
 * a test needs to see the requests or lose some of them.
 */
import { describe } from 'vitest';
import { lockHandleSpecs } from './specs/lock-handle.js';
import { remainingTimeSpecs } from './specs/remaining-time.js';
import { transportSpecs } from './specs/transports.js';
import { usingSpecs } from './specs/using.js';
import { clientStack } from './support/client-stack.js';

const stack = clientStack('stack');

describe('transports: a whole lock cycle', () => transportSpecs(stack));
describe('the lock handle', () => lockHandleSpecs(stack));
describe('using()', () => usingSpecs(stack));
describe('inside a Lambda function: the remaining time', () => remainingTimeSpecs(stack));
