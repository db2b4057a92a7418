/**
 * k6 gives scripts a `console`, which @types/k6 leaves to the DOM or Node typings; neither fits a
 * k6 script (the DOM's `open` would clash with k6's), so this declares the part these scripts use.
 */
declare const console: { log(...args: unknown[]): void; error(...args: unknown[]): void; warn(...args: unknown[]): void };
