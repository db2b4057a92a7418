/**
 * `provider.vpc` for serverless.yml, from the stage params `vpcSubnetIds` and `vpcSecurityGroupIds`
 * (comma-separated ids, so that `--param="vpcSubnetIds=subnet-a,subnet-b"` and the
 * LOCK_VPC_SUBNET_IDS / LOCK_VPC_SECURITY_GROUP_IDS variables work as well as the params block).
 * Both set: the functions run in those subnets (managed clusters usually live in a VPC). Both
 * empty: no VPC. One without the other is refused at package time rather than at deploy time.
 */
const PATTERNS = { vpcSubnetIds: /^subnet-[0-9a-f]{8,17}$/, vpcSecurityGroupIds: /^sg-[0-9a-f]{8,17}$/ };

async function idsOf(resolveVariable, name) {
  const raw = await resolveVariable(`param:${name}, ''`);
  const ids = String(raw ?? '')
    .split(',')
    .map((id) => id.trim())
    .filter((id) => id !== '');
  const wrong = ids.filter((id) => !PATTERNS[name].test(id));
  if (wrong.length > 0)
    throw new Error(
      `param ${name}: ${wrong.join(', ')} ${wrong.length === 1 ? 'is' : 'are'} not ${name === 'vpcSubnetIds' ? 'a subnet id (subnet-…)' : 'a security group id (sg-…)'}`,
    );
  return ids;
}

module.exports = async ({ resolveVariable }) => {
  const subnetIds = await idsOf(resolveVariable, 'vpcSubnetIds');
  const securityGroupIds = await idsOf(resolveVariable, 'vpcSecurityGroupIds');
  if (subnetIds.length === 0 && securityGroupIds.length === 0) return null;
  if (subnetIds.length === 0 || securityGroupIds.length === 0) {
    throw new Error('params vpcSubnetIds and vpcSecurityGroupIds: set both (the functions run in a VPC) or neither');
  }
  return { subnetIds, securityGroupIds };
};
