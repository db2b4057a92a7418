/** Finds a JDK for the server: the integ-test distributions bundle none. */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Distribution, ELASTICSEARCH } from './distribution.js';
import { LocalEsError } from './node.js';

function javaMajor(javaHome: string): number | undefined {
  const release = join(javaHome, 'release');
  if (!existsSync(release) || !existsSync(join(javaHome, 'bin', 'java'))) return undefined;
  const match = /JAVA_VERSION="(\d+)/.exec(readFileSync(release, 'utf8'));
  return match ? Number(match[1]) : undefined;
}

/** ES_JAVA_HOME (OPENSEARCH_JAVA_HOME) wins; otherwise the newest JDK recent enough under /usr/lib/jvm. */
export function findJavaHome(distribution: Distribution = ELASTICSEARCH): string {
  const { minimumJava, product, version, urlEnv } = distribution;
  const variable = distribution.env.javaHome;
  const explicit = process.env[variable];
  if (explicit) {
    const major = javaMajor(explicit);
    if (!major || major < minimumJava) {
      throw new LocalEsError(`${variable}=${explicit} is not a JDK ${minimumJava}+ (found ${major ?? 'no JDK'}).`);
    }
    return explicit;
  }
  const jvmRoot = '/usr/lib/jvm';
  const candidates = existsSync(jvmRoot)
    ? readdirSync(jvmRoot)
        .map((name) => join(jvmRoot, name))
        .map((home) => ({ home, major: javaMajor(home) ?? 0 }))
        .filter((jdk) => jdk.major >= minimumJava)
        .sort((a, b) => b.major - a.major)
    : [];
  const best = candidates[0];
  if (!best) {
    throw new LocalEsError(
      `${product} ${version} needs a JDK ${minimumJava} or newer and none was found under ${jvmRoot}. ` +
        `Install one (for example a Temurin JDK) or point ${variable} at it, or set ${urlEnv} to use an existing cluster.`,
    );
  }
  return best.home;
}
