/** Finds a JDK for Elasticsearch: the integ-test distribution bundles none. */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ES_VERSION, LocalEsError } from './node.js';

const MINIMUM_JAVA = 21;

function javaMajor(javaHome: string): number | undefined {
  const release = join(javaHome, 'release');
  if (!existsSync(release) || !existsSync(join(javaHome, 'bin', 'java'))) return undefined;
  const match = /JAVA_VERSION="(\d+)/.exec(readFileSync(release, 'utf8'));
  return match ? Number(match[1]) : undefined;
}

/** ES_JAVA_HOME wins; otherwise the newest JDK of 21 or newer under /usr/lib/jvm. */
export function findJavaHome(): string {
  const explicit = process.env.ES_JAVA_HOME;
  if (explicit) {
    const major = javaMajor(explicit);
    if (!major || major < MINIMUM_JAVA) {
      throw new LocalEsError(`ES_JAVA_HOME=${explicit} is not a JDK ${MINIMUM_JAVA}+ (found ${major ?? 'no JDK'}).`);
    }
    return explicit;
  }
  const jvmRoot = '/usr/lib/jvm';
  const candidates = existsSync(jvmRoot)
    ? readdirSync(jvmRoot)
        .map((name) => join(jvmRoot, name))
        .map((home) => ({ home, major: javaMajor(home) ?? 0 }))
        .filter((jdk) => jdk.major >= MINIMUM_JAVA)
        .sort((a, b) => b.major - a.major)
    : [];
  const best = candidates[0];
  if (!best) {
    throw new LocalEsError(
      `Elasticsearch ${ES_VERSION} needs a JDK ${MINIMUM_JAVA} or newer and none was found under ${jvmRoot}. ` +
        'Install one (for example a Temurin JDK) or point ES_JAVA_HOME at it, or set ES_URL to use an existing cluster.',
    );
  }
  return best.home;
}
