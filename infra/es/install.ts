/** Fetches the distribution from Maven Central once per machine and unpacks it into the cache. */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { which } from '../lib/which.js';
import { cacheDir, LocalEsError, type LocalNode } from './node.js';

export function ensureInstalled(node: LocalNode, log: (line: string) => void): void {
  const { artifact, bin, installDirName, product, urlEnv } = node.distribution;
  if (existsSync(join(node.installDir, 'bin', bin))) return;
  if (!which('mvn')) {
    throw new LocalEsError(`Maven (mvn) is needed once to fetch ${product} from Maven Central; install it or set ${urlEnv}.`);
  }
  const downloads = join(cacheDir(), 'downloads');
  mkdirSync(downloads, { recursive: true });
  log(`fetching ${artifact} with mvn (once per machine, 120-160 MB)`);
  execFileSync('mvn', ['-q', '-B', 'dependency:copy', `-Dartifact=${artifact}`, `-DoutputDirectory=${downloads}`], {
    stdio: 'inherit',
  });
  const zip = join(downloads, `${installDirName}.zip`);
  const staging = `${node.installDir}.partial`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  execFileSync('unzip', ['-q', zip, '-d', staging], { stdio: 'inherit' });
  // Rename last so that an interrupted unpack is never mistaken for an install.
  execFileSync('mv', [join(staging, installDirName), node.installDir]);
  rmSync(staging, { recursive: true, force: true });
}
