/**
 * Errors as the functions answer them (packages/engine/src/error-reply.ts makes the answer), and
 * counted: each refusal or failure in its catalogue metric.
 */
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { ERRORS } from '../../packages/client/src/wire.js';
import { answeredName } from '../../packages/engine/src/error-reply.js';

export {
  type ErrorBody,
  type ErrorReply,
  errorReply,
  INVOCATION_ERROR_NAMES,
  InternalError,
  invocationError,
} from '../../packages/engine/src/error-reply.js';

/** Counts a refusal or failure in its catalogue metric. */
export function failureMetric(metrics: Metrics, error: unknown): void {
  metrics.addMetric(ERRORS[answeredName(error)].metric, MetricUnit.Count, 1);
}
