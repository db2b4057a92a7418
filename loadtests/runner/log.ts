/** The run's two voices on the terminal: a phase heading and a detail line. */
export const log = (line: string): void => console.log(`[loadtest] ${line}`);
export const warn = (line: string): void => console.error(`[loadtest] ${line}`);
export const phase = (line: string): void => console.log(`\n==> ${line}`);
