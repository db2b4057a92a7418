/**
 * The little of k6's API these scripts use, so that `tsc -p loadtests` can check them without
 * @types/k6 (k6 itself strips types and checks nothing).
 */
declare const __ENV: Record<string, string | undefined>;
/** k6's init-context file reader. */
declare function open(path: string): string;
declare const console: { log(...args: unknown[]): void; error(...args: unknown[]): void; warn(...args: unknown[]): void };

declare module 'k6' {
  export function sleep(seconds: number): void;
}

declare module 'k6/http' {
  export interface RefinedResponse {
    status: number;
    body: string | null | ArrayBuffer;
    error: string;
    headers: Record<string, string>;
    timings: { duration: number; waiting: number };
  }
  export interface Params {
    headers?: Record<string, string>;
    tags?: Record<string, string>;
    timeout?: string;
    responseCallback?: unknown;
  }
  const http: {
    get(url: string, params?: Params): RefinedResponse;
    post(url: string, body: string, params?: Params): RefinedResponse;
    expectedStatuses(...statuses: number[]): unknown;
  };
  export default http;
}

declare module 'k6/metrics' {
  type Tags = Record<string, string>;
  export class Counter {
    constructor(name: string, isTime?: boolean);
    add(value: number, tags?: Tags): void;
  }
  export class Rate {
    constructor(name: string);
    add(value: boolean | number, tags?: Tags): void;
  }
  export class Trend {
    constructor(name: string, isTime?: boolean);
    add(value: number, tags?: Tags): void;
  }
}

declare module 'k6/execution' {
  const exec: {
    scenario: { name: string; startTime: number; iterationInTest: number; progress: number };
    vu: { idInTest: number };
    test: { abort(reason?: string): never };
  };
  export default exec;
}
