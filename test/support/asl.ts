/**
 * Just enough of Amazon States Language to run the example state machine against the real
 * handlers in-process: Task (lambda:invoke), Choice (BooleanEquals, IsPresent), Pass, Succeed, Fail;
 * Parameters with `.$` paths, ResultSelector, ResultPath, OutputPath, Retry (with scaled-down delays)
 * and Catch. A path to a missing field throws (Step Functions fails the execution: States.Runtime).
 */
type Json = any;

export interface AslDefinition {
  StartAt: string;
  States: Record<string, Json>;
}

export type Invoke = (functionRef: string, payload: unknown) => Promise<unknown>;

export interface RunResult {
  status: 'SUCCEEDED' | 'FAILED';
  output?: Json;
  error?: string;
  cause?: string;
  visited: string[];
}

/** The value at `path`, undefined when it does not exist. */
function lookUp(path: string, input: Json, context: Json): Json {
  const [root, rest] = path.startsWith('$$') ? [context, path.slice(2)] : [input, path.slice(1)];
  if (rest === '') return root;
  let node = root;
  for (const part of rest.replace(/^\./, '').split('.')) {
    if (node === null || typeof node !== 'object') return undefined;
    node = node[part];
  }
  return node;
}

export function readPath(path: string, input: Json, context: Json): Json {
  const node = lookUp(path, input, context);
  if (node === undefined) throw new Error(`States.Runtime: ${path} does not exist`);
  return node;
}

/** A Choice rule with one comparison (BooleanEquals, or IsPresent, which alone may name a missing path). */
function choiceMatches(rule: Json, input: Json, context: Json): boolean {
  if ('IsPresent' in rule) return (lookUp(rule.Variable, input, context) !== undefined) === rule.IsPresent;
  if ('BooleanEquals' in rule) return readPath(rule.Variable, input, context) === rule.BooleanEquals;
  throw new Error(`unsupported choice rule ${JSON.stringify(rule)}`);
}

const outputOf = (state: Json, data: Json, context: Json): Json => (state.OutputPath ? readPath(state.OutputPath, data, context) : data);

function writePath(path: string | null | undefined, input: Json, result: Json): Json {
  if (path === null) return input;
  if (path === undefined || path === '$') return result;
  const parts = path.replace(/^\$\./, '').split('.');
  const copy = structuredClone(input ?? {});
  let node = copy;
  for (const part of parts.slice(0, -1)) node = node[part] ??= {};
  node[parts.at(-1)!] = result;
  return copy;
}

export function applyTemplate(template: Json, input: Json, context: Json): Json {
  if (Array.isArray(template)) return template.map((item) => applyTemplate(item, input, context));
  if (template === null || typeof template !== 'object') return template;
  const out: Json = {};
  for (const [key, value] of Object.entries(template)) {
    if (key.endsWith('.$')) out[key.slice(0, -2)] = readPath(value as string, input, context);
    else out[key] = applyTemplate(value, input, context);
  }
  return out;
}

const matches = (errorEquals: string[], name: string): boolean =>
  errorEquals.includes(name) || errorEquals.includes('States.ALL') || (errorEquals.includes('States.TaskFailed') && name !== 'States.Timeout');

export async function runStateMachine(
  definition: AslDefinition,
  input: Json,
  options: { invoke: Invoke; executionName: string; delayScale?: number; maxSteps?: number },
): Promise<RunResult> {
  const context = { Execution: { Name: options.executionName, Input: input } };
  const scale = options.delayScale ?? 0.001;
  const visited: string[] = [];
  let name = definition.StartAt;
  let data = input;
  for (let step = 0; step < (options.maxSteps ?? 200); step++) {
    const state = definition.States[name];
    if (!state) throw new Error(`no state ${name}`);
    visited.push(name);
    switch (state.Type) {
      case 'Succeed':
        return { status: 'SUCCEEDED', output: outputOf(state, data, context), visited };
      case 'Fail':
        return {
          status: 'FAILED',
          error: state.Error ?? (state.ErrorPath ? readPath(state.ErrorPath, data, context) : undefined),
          cause: state.Cause ?? (state.CausePath ? readPath(state.CausePath, data, context) : undefined),
          visited,
        };
      case 'Choice': {
        const choice = (state.Choices as Json[]).find((rule) => choiceMatches(rule, data, context));
        name = choice ? choice.Next : state.Default;
        continue;
      }
      case 'Pass': {
        const result = state.Parameters ? applyTemplate(state.Parameters, data, context) : 'Result' in state ? state.Result : data;
        data = outputOf(state, writePath(state.ResultPath, data, result), context);
        if (state.End) return { status: 'SUCCEEDED', output: data, visited };
        name = state.Next;
        continue;
      }
      case 'Task': {
        if (state.Resource !== 'arn:aws:states:::lambda:invoke') throw new Error(`unsupported resource ${state.Resource}`);
        const parameters = applyTemplate(state.Parameters, data, context);
        const attempts = new Map<Json, number>();
        let outcome: { result: Json } | { error: string; cause: string };
        for (;;) {
          try {
            outcome = { result: { StatusCode: 200, Payload: await options.invoke(parameters.FunctionName, parameters.Payload) } };
            break;
          } catch (thrown) {
            const error = thrown as Error;
            outcome = { error: error.name, cause: JSON.stringify({ errorType: error.name, errorMessage: error.message }) };
            const retrier = (state.Retry as Json[] | undefined)?.find((rule) => matches(rule.ErrorEquals, error.name));
            const used = attempts.get(retrier) ?? 0;
            if (!retrier || used >= (retrier.MaxAttempts ?? 3)) break;
            attempts.set(retrier, used + 1);
            const delay = Math.min((retrier.IntervalSeconds ?? 1) * (retrier.BackoffRate ?? 2) ** used, retrier.MaxDelaySeconds ?? Infinity) * 1000 * scale;
            await new Promise((resolve) => setTimeout(resolve, delay));
          }
        }
        if ('error' in outcome) {
          const catcher = (state.Catch as Json[] | undefined)?.find((rule) => matches(rule.ErrorEquals, outcome.error));
          if (!catcher) return { status: 'FAILED', error: outcome.error, cause: outcome.cause, visited };
          data = writePath(catcher.ResultPath ?? '$', data, { Error: outcome.error, Cause: outcome.cause });
          name = catcher.Next;
          continue;
        }
        const selected = state.ResultSelector ? applyTemplate(state.ResultSelector, outcome.result, context) : outcome.result;
        data = outputOf(state, writePath(state.ResultPath, data, selected), context);
        if (state.End) return { status: 'SUCCEEDED', output: data, visited };
        name = state.Next;
        continue;
      }
      default:
        throw new Error(`unsupported state type ${state.Type}`);
    }
  }
  throw new Error('too many steps');
}
