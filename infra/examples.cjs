/**
 * The examples (custom.examples in serverless.yml: the SQS consumer sqsConsumer, its queue, its
 * dead-letter queue and that queue's alarm) are packaged only when the stage param `examples` is true:
 * on in the `local` stage, off in every other unless `--param="examples=true"` asks for them. The
 * consumer locks through the engine in-process (the namespace policy does not judge it) and writes a
 * work index with the functions' role and credentials, so no stage gets it without asking.
 * `${file(./infra/examples.cjs):functions}` and `…:resources` are items of the `functions` and
 * `resources` lists, which the framework merges: `{}` adds nothing.
 */
const enabled = async (resolveVariable) => {
  const raw = String((await resolveVariable("param:examples, 'false'")) ?? '')
    .trim()
    .toLowerCase();
  if (!['', 'true', 'false'].includes(raw)) throw new Error(`param examples: must be true or false (got ${raw})`);
  return raw === 'true';
};

module.exports = {
  functions: async ({ resolveVariable }) => ((await enabled(resolveVariable)) ? resolveVariable('self:custom.examples.functions') : {}),
  resources: async ({ resolveVariable }) => ((await enabled(resolveVariable)) ? resolveVariable('self:custom.examples.resources') : {}),
};
