/**
 * The wake-up statements of `provider.iam.role.statements` (functions/runtime/wake/): when a queued
 * waiter's turn comes, the lock function that hands the lock over (acquire, renew, release, or the
 * sweeper) completes its Step Functions task, sends to its SQS queue or puts an event on its
 * EventBridge bus. Each channel only for the resources its stage param lists (comma-separated ARNs; a
 * `*` only in the name, e.g. `stateMachine:orders-*`): wakeStateMachineArns, wakeQueueArns,
 * wakeEventBusArns. Empty (the default): no statement, so IAM refuses wake-ups by that channel, and each
 * refusal counts in WakeDeliveryFailures (its alarm), rather than any resource being open by default.
 * Step Functions authorizes SendTaskSuccess / SendTaskFailure against the state machine the task
 * token belongs to, so the state machines are the tightest scope it allows.
 */
const PARTITION_REGION_ACCOUNT = 'arn:aws(-[a-z]+)*:SERVICE:[a-z]{2}(-[a-z]+)+-\\d:\\d{12}';
const arn = (service, rest) => new RegExp(`^${PARTITION_REGION_ACCOUNT.replace('SERVICE', service)}:${rest}$`);

const CHANNELS = [
  {
    param: 'wakeStateMachineArns',
    actions: ['states:SendTaskSuccess', 'states:SendTaskFailure'],
    pattern: arn('states', 'stateMachine:[A-Za-z0-9_*-]+'),
    shape: 'arn:aws:states:<region>:<account id>:stateMachine:<name>',
  },
  {
    param: 'wakeQueueArns',
    actions: ['sqs:SendMessage'],
    pattern: arn('sqs', '[A-Za-z0-9_*-]+(\\.fifo)?'),
    shape: 'arn:aws:sqs:<region>:<account id>:<queue name>',
  },
  {
    param: 'wakeEventBusArns',
    actions: ['events:PutEvents'],
    pattern: arn('events', 'event-bus/[A-Za-z0-9_.*/-]+'),
    shape: 'arn:aws:events:<region>:<account id>:event-bus/<bus name>',
  },
];

async function arnsOf(resolveVariable, { param, pattern, shape }) {
  const raw = await resolveVariable(`param:${param}, ''`);
  const arns = String(raw ?? '')
    .split(',')
    .map((value) => value.trim())
    .filter((value) => value !== '');
  const wrong = arns.filter((value) => !pattern.test(value));
  if (wrong.length > 0) throw new Error(`param ${param}: ${wrong.join(', ')} ${wrong.length === 1 ? 'is' : 'are'} not of the form ${shape}`);
  return arns;
}

module.exports = async ({ resolveVariable }) => {
  const statements = [];
  for (const channel of CHANNELS) {
    const arns = await arnsOf(resolveVariable, channel);
    if (arns.length > 0) statements.push({ Effect: 'Allow', Action: channel.actions, Resource: arns });
  }
  return statements;
};
