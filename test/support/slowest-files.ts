/**
 * A vitest reporter that prints the ten slowest test files of the run (per store project), by the
 * time their tests and hooks took plus their import: where `npm test`'s minutes go.
 */
import { relative } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';

const SHOWN = 10;

export default class SlowestFiles implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const timed = modules.map((module) => {
      const { duration, collectDuration } = module.diagnostic();
      return { file: `${relative(process.cwd(), module.moduleId)} [${module.project.name}]`, seconds: (duration + collectDuration) / 1000 };
    });
    if (timed.length < 2) return;
    const slowest = timed.sort((a, b) => b.seconds - a.seconds).slice(0, SHOWN);
    const total = timed.reduce((sum, entry) => sum + entry.seconds, 0);
    console.log(`\nThe ${slowest.length} slowest test files (of ${timed.length}, ${Math.round(total)} s in all, files run in parallel):`);
    for (const { file, seconds } of slowest) console.log(`  ${seconds.toFixed(1).padStart(7)} s  ${file}`);
  }
}
