/**
 * Secrets named by the environment (ES_API_KEY_PARAMETER, LOCK_TOKEN_SIGNING_KEY_PARAMETER, and the
 * namespace policy's LOCK_POLICY_PARAMETER), read through Powertools Parameters and cached: an SSM
 * parameter name (`/path/name` or `ssm:name`, SecureString decrypted) or a Secrets Manager secret (`arn:aws:secretsmanager:...` or
 * `secretsmanager:name`). The AWS SDK clients load only when a parameter is configured.
 */

export type SecretSource = { kind: 'ssm'; name: string } | { kind: 'secretsmanager'; id: string };

export function secretSource(reference: string): SecretSource {
  const value = reference.trim();
  if (value.startsWith('arn:aws:secretsmanager:') || value.startsWith('arn:aws-cn:secretsmanager:') || value.startsWith('arn:aws-us-gov:secretsmanager:')) {
    return { kind: 'secretsmanager', id: value };
  }
  if (value.startsWith('secretsmanager:')) return { kind: 'secretsmanager', id: value.slice('secretsmanager:'.length) };
  if (value.startsWith('ssm:')) return { kind: 'ssm', name: value.slice('ssm:'.length) };
  if (/^arn:aws[a-z-]*:ssm:[^:]*:[^:]*:parameter\//.test(value)) return { kind: 'ssm', name: value };
  return { kind: 'ssm', name: value };
}

/** A secret may be the key itself or a JSON object holding it under one of `fields`. */
export function pickSecret(raw: string, fields: readonly string[]): string {
  const text = raw.trim();
  if (text.startsWith('{')) {
    try {
      const parsed = JSON.parse(text) as Record<string, unknown>;
      for (const field of fields) {
        const value = parsed[field];
        if (typeof value === 'string' && value.length > 0) return value;
      }
    } catch {
      // not JSON: the whole text is the secret
    }
  }
  return text;
}

/**
 * Fetches the secret's current value. Powertools caches it for `maxAgeSeconds`: the runtime calls this
 * once per container for the API key and the signing key, and per call for the namespace policy
 * (authorization.ts), which a shorter age lets change without a deploy.
 */
export async function readSecret(reference: string, maxAgeSeconds = 900): Promise<string> {
  const source = secretSource(reference);
  let value: unknown;
  if (source.kind === 'ssm') {
    const { getParameter } = await import('@aws-lambda-powertools/parameters/ssm');
    value = await getParameter(source.name, { decrypt: true, maxAge: maxAgeSeconds });
  } else {
    const { getSecret } = await import('@aws-lambda-powertools/parameters/secrets');
    value = await getSecret(source.id, { maxAge: maxAgeSeconds });
  }
  if (value instanceof Uint8Array) value = Buffer.from(value).toString('utf8');
  if (typeof value !== 'string' || value.length === 0) throw new Error(`The secret ${reference} is empty or not text`);
  return value;
}
