/**
 * The AWS SDK's errors read by what they carry (`name`, `$metadata.httpStatusCode`), never by class:
 * the SDK is the user's, of whatever version and module format, and this package imports none of it.
 */

/** The error's `name` (the service's error code as the SDK v3 names its exceptions), when it has one. */
export function awsErrorName(error: unknown): string | undefined {
  const name = typeof error === 'object' && error !== null ? (error as { name?: unknown }).name : undefined;
  return typeof name === 'string' ? name : undefined;
}

/** The HTTP status the service answered with (SDK v3: `$metadata.httpStatusCode`), when known. */
export function awsHttpStatus(error: unknown): number | undefined {
  const metadata = typeof error === 'object' && error !== null ? (error as { $metadata?: unknown }).$metadata : undefined;
  const status = typeof metadata === 'object' && metadata !== null ? (metadata as { httpStatusCode?: unknown }).httpStatusCode : undefined;
  return typeof status === 'number' ? status : undefined;
}
