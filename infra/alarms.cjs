/**
 * The alarms' stage params for serverless.yml, checked at package time rather than at deploy time:
 * `${file(./infra/alarms.cjs):actions}` is the alarms' AlarmActions and OKActions (the SNS topic
 * `alarmTopicArn`, or none: the alarms then show in the console only), and
 * `${file(./infra/alarms.cjs):leasesRunOutThreshold}` the LeasesRunOut alarm's threshold (0 when the
 * param is empty: that alarm is not created then, see its Condition).
 */
const TOPIC_ARN = /^arn:aws(-[a-z]+)*:sns:[a-z]{2}(-[a-z]+)+-\d:\d{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$/;

const text = async (resolveVariable, name) => String((await resolveVariable(`param:${name}, ''`)) ?? '').trim();

module.exports = {
  actions: async ({ resolveVariable }) => {
    const topicArn = await text(resolveVariable, 'alarmTopicArn');
    if (topicArn === '') return [];
    if (!TOPIC_ARN.test(topicArn)) throw new Error(`param alarmTopicArn: ${topicArn} is not an SNS topic ARN (arn:aws:sns:<region>:<account id>:<topic name>)`);
    return [topicArn];
  },
  leasesRunOutThreshold: async ({ resolveVariable }) => {
    const threshold = await text(resolveVariable, 'leasesRunOutAlarmThreshold');
    if (threshold === '') return 0;
    if (!/^[1-9]\d*$/.test(threshold))
      throw new Error(`param leasesRunOutAlarmThreshold: must be a whole number of leases from 1 up, or empty for no alarm (got ${threshold})`);
    return Number(threshold);
  },
};
