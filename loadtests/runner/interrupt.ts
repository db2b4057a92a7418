/**
 * Ctrl-C during a run: the first press lets k6 finish its summary and the stack stop cleanly, the
 * second kills k6, the third exits without cleanup.
 */
import type { ChildProcess } from 'node:child_process';

export class Interrupt {
  count = 0;
  /** The k6 process running now, if any. */
  child: ChildProcess | undefined;
  private forwardTimer: NodeJS.Timeout | undefined;

  install(): void {
    let last = 0;
    const onSignal = (signal: NodeJS.Signals): void => {
      // npm/npx forward the terminal's Ctrl-C to us as well: signals this close together are one press.
      if (Date.now() - last < 1000) return;
      last = Date.now();
      this.count++;
      if (this.count === 1) {
        console.error(`\n[loadtest] ${signal}: stopping k6, then the stack (press Ctrl-C again to hurry)`);
        // A terminal Ctrl-C reaches k6 too; forward only if it is still running a moment later.
        this.forwardTimer = setTimeout(() => this.child?.kill('SIGINT'), 1500);
      } else if (this.count === 2) {
        console.error(`[loadtest] ${signal} again: killing k6 (a third time exits without cleanup)`);
        clearTimeout(this.forwardTimer);
        this.child?.kill('SIGKILL');
      } else {
        process.exit(130);
      }
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    process.on('SIGHUP', onSignal);
  }

  get interrupted(): boolean {
    return this.count > 0;
  }
}
