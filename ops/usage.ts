/** The --help text: commands, target syntax, backends, output and exit codes. */
export const USAGE = `usage: npx es-lease-locks <command> [target] [flags]      (or: npm run locks -- <command> ...)

An operator's view of the locks, and the break-glass operations.

Commands:
  list [--namespace NS] [--granularity G] [--owner O] [--path-prefix P] [--limit N]
                      live locks: holders, modes, expiries, fencing tokens, queue lengths (search: about 1 s behind)
  inspect <target> [--mode exclusive|shared]
                      who holds the target's keys, and each lock above it that can block it, now
  revoke <target> --reason TEXT [--by NAME]
                      break glass: every holder of the target loses its lease (its renew fails with
                      LeaseLostError), the next write takes a fencing token above theirs, waiters are served
  drain <target> --reason TEXT [--by NAME]
                      clear the target's queue, then tell each waiter it held that its wait failed
  sweep [--batch-size N] [--max-batches N]
                      run a sweep now and print its report
  status              the lock index: incarnation, epoch, shards, counts, the oldest lease

Target (one argument):
  NAMESPACE/global              orders/global
  NAMESPACE/document/ID[,ID]    orders/document/o-1,o-2
  NAMESPACE/tree/PATH           orders/tree//a/b   (the path is everything after "tree/", its "/" included)
  or the flags --namespace NS --granularity G [--ids ID,ID | --path /a/b] (for an id with a comma)

Where the commands go:
  the cluster (default)  ES_URL (with ES_API_KEY) or OPENSEARCH_URL, else the project's own node on 127.0.0.1
                         (not started here); --store elasticsearch|opensearch; --index NAME (default LOCK_INDEX, else locks)
                         The clock-skew allowance is the lock index's (recorded when it was made); MAX_CLOCK_SKEW_MS,
                         when set, must be that value (the command refuses otherwise)
  a deployed stage       --url https://<api>.execute-api.<region>.amazonaws.com (or LOCKS_URL): its HTTP API,
                         SigV4-signed with your AWS credentials (AWS_PROFILE, the environment, SSO...);
                         --region R (default: from the host name, else AWS_REGION); --unsigned for a local stack
  the sweeper function   sweep --stage S (invokes es-lease-locks-S-sweeper) or --sweeper-function NAME|ARN;
                         --region R; --lambda-endpoint URL for a local invoke API
  Who revoked or drained is recorded: over a stage your IAM principal (with --by beside it: "<arn> (as NAME)"),
  straight against the cluster --by, else user@host. Over a stage, revoke and drain need the namespace
  policy's action "revoke", which neither "*" nor allow-all grants; status needs list on every namespace.

Output: a table for people; --json prints the service's JSON answer, for scripts. --verbose: the whole error.

Exit codes:
  0  done
  1  failed: the service answered with an error, or could not be reached (one line says which)
  2  usage: a bad argument (one line names it and the rule)
  3  nothing there: list found no lock, inspect found the target free, revoke found no holder, drain no waiter
  4  refused: 403 (the namespace policy, or IAM, does not let you)`;
