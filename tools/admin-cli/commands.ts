import type { AdminActor, AdminService } from '../../src/admin/admin.service';
import type { AccountDto, PlanDto } from '../../src/admin/dto/admin-responses.dto';
import { integerArg, OptionSpec, ParsedArgs, UsageError } from './args';

export interface CommandOutput {
  /** What --json prints. */
  json: unknown;
  /** What a person reads. */
  text: string;
}

/** Validated arguments, ready to run against the database. */
export type Operation = (admin: AdminService, actor: AdminActor) => Promise<CommandOutput>;

export interface CommandSpec {
  name: string;
  summary: string;
  positionals: string[];
  options: OptionSpec[];
  examples: string[];
  /** Checks the arguments (UsageError, exit 2) before anything touches the database. */
  prepare(args: ParsedArgs): Operation;
}

const JSON_OPTION: OptionSpec = { name: 'json', description: 'print the result as JSON (for scripts)' };
const HELP_OPTION: OptionSpec = { name: 'help', description: 'show this help' };
export const GLOBAL_OPTIONS = [JSON_OPTION, HELP_OPTION];

const positiveInteger = (value: string, label: string) => integerArg(value, label, (n) => n > 0, 'a positive integer');

export const COMMANDS: CommandSpec[] = [
  {
    name: 'create-account',
    summary: 'Create an account with default settings and its first API key (printed once).',
    positionals: [],
    options: [
      { name: 'name', value: 'NAME', description: 'account name (required)', required: true },
      { name: 'plan', value: 'PLAN', description: 'plan name (default: free)' },
      { name: 'credits', value: 'N', description: 'initial credits (default: 0)' },
    ],
    examples: ['create-account --name "Acme Ltd" --plan standard --credits 10000'],
    prepare(args) {
      const name = stringOption(args, 'name');
      const plan = args.options.get('plan') as string | undefined;
      const creditsText = args.options.get('credits') as string | undefined;
      const credits = creditsText === undefined ? undefined : integerArg(creditsText, 'credits', (n) => n >= 0, 'an integer >= 0');
      return async (admin, actor) => {
        const created = await admin.createAccount({ name, plan, credits }, actor);
        return {
          json: created,
          text: lines([
            ['account_id', created.id],
            ['name', created.name],
            ['plan', created.plan],
            ['balance', created.balance],
            ['api_key', created.api_key],
          ]) + '\nThe API key is shown only once: store it now.',
        };
      };
    },
  },
  {
    name: 'issue-key',
    summary: 'Issue another API key for an account (printed once).',
    positionals: ['ACCOUNT_ID'],
    options: [],
    examples: ['issue-key 0b6c2b8e-3f1e-4c4a-9a57-3d8b7f6f2a11'],
    prepare(args) {
      const [accountId] = args.positionals;
      return async (admin, actor) => {
        const key = await admin.issueKey(accountId, actor);
        const issued = { id: key.id, account_id: accountId, prefix: key.prefix, api_key: key.apiKey };
        return {
          json: issued,
          text: lines([['key_id', key.id], ['account_id', accountId], ['prefix', key.prefix], ['api_key', key.apiKey]]) +
            '\nThe API key is shown only once: store it now.',
        };
      };
    },
  },
  {
    name: 'revoke-key',
    summary: 'Revoke an API key (refused from its next request on; other running instances within a second).',
    positionals: ['KEY_ID'],
    options: [],
    examples: ['revoke-key 5f0e4d6a-1c2b-4a3d-8e9f-0a1b2c3d4e5f'],
    prepare(args) {
      const [keyId] = args.positionals;
      return async (admin, actor) => {
        const revoked = await admin.revokeKey(keyId, actor);
        return { json: revoked, text: lines([['key_id', revoked.id], ['status', revoked.status]]) };
      };
    },
  },
  {
    name: 'top-up',
    summary: 'Add credits to an account (a TOPUP ledger row).',
    positionals: ['ACCOUNT_ID', 'AMOUNT'],
    options: [{ name: 'reason', value: 'TEXT', description: 'why, stored on the ledger row (default: "top-up via CLI")' }],
    examples: ['top-up 0b6c2b8e-3f1e-4c4a-9a57-3d8b7f6f2a11 5000 --reason "invoice 2024-117"'],
    prepare(args) {
      const [accountId, amountText] = args.positionals;
      const amount = positiveInteger(amountText, 'AMOUNT');
      const reason = (args.options.get('reason') as string | undefined) ?? 'top-up via CLI';
      return creditsOperation(accountId, amount, reason);
    },
  },
  {
    name: 'adjust',
    summary: 'Correct a balance by a signed amount (never below zero), with a mandatory reason.',
    positionals: ['ACCOUNT_ID', 'AMOUNT'],
    options: [{ name: 'reason', value: 'TEXT', description: 'why, stored on the ledger row (required)', required: true }],
    examples: ['adjust 0b6c2b8e-3f1e-4c4a-9a57-3d8b7f6f2a11 -250 --reason "duplicate top-up"'],
    prepare(args) {
      const [accountId, amountText] = args.positionals;
      const amount = integerArg(amountText, 'AMOUNT', (n) => n !== 0, 'a non-zero integer');
      return creditsOperation(accountId, amount, stringOption(args, 'reason'));
    },
  },
  {
    name: 'set-plan',
    summary: "Change an account's plan.",
    positionals: ['ACCOUNT_ID', 'PLAN'],
    options: [],
    examples: ['set-plan 0b6c2b8e-3f1e-4c4a-9a57-3d8b7f6f2a11 enterprise'],
    prepare(args) {
      const [accountId, plan] = args.positionals;
      return async (admin, actor) => accountOutput(await admin.updateAccount(accountId, { plan }, actor));
    },
  },
  {
    name: 'disable-account',
    summary: 'Disable an account: every key of it gets 401 REVOKED_API_KEY.',
    positionals: ['ACCOUNT_ID'],
    options: [],
    examples: ['disable-account 0b6c2b8e-3f1e-4c4a-9a57-3d8b7f6f2a11'],
    prepare(args) {
      const [accountId] = args.positionals;
      return async (admin, actor) => accountOutput(await admin.updateAccount(accountId, { disabled: true }, actor));
    },
  },
  {
    name: 'enable-account',
    summary: 'Enable a disabled account again (its active keys work again).',
    positionals: ['ACCOUNT_ID'],
    options: [],
    examples: ['enable-account 0b6c2b8e-3f1e-4c4a-9a57-3d8b7f6f2a11'],
    prepare(args) {
      const [accountId] = args.positionals;
      return async (admin, actor) => accountOutput(await admin.updateAccount(accountId, { disabled: false }, actor));
    },
  },
  {
    name: 'show-account',
    summary: 'Show an account: balance, plan, state, settings and keys (never the key itself).',
    positionals: ['ACCOUNT_ID'],
    options: [],
    examples: ['show-account 0b6c2b8e-3f1e-4c4a-9a57-3d8b7f6f2a11 --json'],
    prepare(args) {
      const [accountId] = args.positionals;
      return async (admin) => accountOutput(await admin.getAccount(accountId));
    },
  },
  {
    name: 'rotate-webhook-secret',
    summary: 'Give an account a new webhook secret (printed once); the old one keeps signing callbacks for 24 hours.',
    positionals: ['ACCOUNT_ID'],
    options: [],
    examples: ['rotate-webhook-secret 0b6c2b8e-3f1e-4c4a-9a57-3d8b7f6f2a11'],
    prepare(args) {
      const [accountId] = args.positionals;
      return async (admin, actor) => {
        const rotated = await admin.rotateWebhookSecret(accountId, actor);
        return {
          json: { account_id: accountId, ...rotated },
          text:
            lines([['account_id', accountId], ['webhook_secret', rotated.webhook_secret], ['previous_secret_valid_until', rotated.previous_secret_valid_until]]) +
            '\nCallbacks carry both signatures until then (X-Signature: <new>,<old>).',
        };
      };
    },
  },
  {
    name: 'list-plans',
    summary: 'List the plans and their rate limits.',
    positionals: [],
    options: [],
    examples: ['list-plans'],
    prepare() {
      return async (admin) => {
        const plans = await admin.listPlans();
        return {
          json: { plans },
          text: table(['plan', 'limit', 'window_seconds', 'max_watched_numbers'], plans.map((p) => [p.name, p.limit, p.window_seconds, p.max_watched_numbers])),
        };
      };
    },
  },
  {
    name: 'update-plan',
    summary: "Change a plan's rate limit (requests per window), and optionally its watched-numbers limit; running services apply it within seconds.",
    positionals: ['NAME'],
    options: [
      { name: 'limit', value: 'N', description: 'requests per window (required)', required: true },
      { name: 'window', value: 'SECONDS', description: 'window length in seconds (required)', required: true },
      { name: 'max-watched', value: 'N', description: 'numbers an account may watch across its watchlists (default: unchanged)' },
    ],
    examples: ['update-plan standard --limit 100 --window 1', 'update-plan standard --limit 100 --window 1 --max-watched 20000'],
    prepare(args) {
      const [name] = args.positionals;
      const limit = positiveInteger(stringOption(args, 'limit'), '--limit');
      const windowSeconds = positiveInteger(stringOption(args, 'window'), '--window');
      const maxWatched = args.options.get('max-watched');
      const max_watched_numbers = typeof maxWatched === 'string' ? integerArg(maxWatched, '--max-watched', (n) => n >= 0, 'an integer >= 0') : undefined;
      return async (admin, actor) => planOutput(await admin.updatePlan(name, { limit, window_seconds: windowSeconds, max_watched_numbers }, actor));
    },
  },
];

function creditsOperation(accountId: string, amount: number, reason: string): Operation {
  return async (admin, actor) => {
    const { balance } = await admin.changeCredits(accountId, amount, reason, actor);
    return { json: { account_id: accountId, balance }, text: lines([['account_id', accountId], ['balance', balance]]) };
  };
}

function accountOutput(account: AccountDto): CommandOutput {
  const checks = Object.entries(account.settings.checks).map(([check, on]) => `${check}=${on ? 'on' : 'off'}`);
  const keys = account.keys.length === 0
    ? '  (none)'
    : table(
        ['key_id', 'prefix', 'status', 'created_at', 'last_used_at'],
        account.keys.map((key) => [key.id, key.prefix, key.status, key.created_at, key.last_used_at ?? 'never']),
      ).replace(/^/gm, '  ');
  return {
    json: account,
    text:
      lines([
        ['account_id', account.id],
        ['name', account.name],
        ['plan', account.plan],
        ['balance', account.balance],
        ['disabled', account.disabled ? 'yes' : 'no'],
        ['created_at', account.created_at],
        ['checks', checks.join(' ')],
      ]) + `\nkeys:\n${keys}`,
  };
}

function planOutput(plan: PlanDto): CommandOutput {
  return {
    json: plan,
    text: lines([['plan', plan.name], ['limit', plan.limit], ['window_seconds', plan.window_seconds], ['max_watched_numbers', plan.max_watched_numbers]]),
  };
}

function stringOption(args: ParsedArgs, name: string): string {
  const value = args.options.get(name);
  if (typeof value !== 'string') throw new UsageError(`--${name} is required`);
  return value;
}

function lines(pairs: Array<[string, string | number]>): string {
  return pairs.map(([label, value]) => `${label}: ${value}`).join('\n');
}

function table(header: string[], rows: Array<Array<string | number>>): string {
  const cells = [header, ...rows.map((row) => row.map(String))];
  const widths = header.map((_, column) => Math.max(...cells.map((row) => row[column].length)));
  return cells.map((row) => row.map((cell, column) => cell.padEnd(widths[column])).join('  ').trimEnd()).join('\n');
}
