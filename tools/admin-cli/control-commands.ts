import { integerArg, ParsedArgs, UsageError } from './args';
import { accountOutput, ACCOUNT_COMMANDS, CommandSpec, lines, table } from './commands';

/** `none` clears a control; anything else must be a whole number of credits. */
function creditsOrNone(value: string | true | undefined, label: string): number | null | undefined {
  if (value === undefined) return undefined;
  if (value === true) throw new UsageError(`${label} needs a value: a number of credits or "none"`);
  return value === 'none' ? null : integerArg(value, label, (n) => n >= 0, 'an integer >= 0 or "none"');
}

function optionalText(args: ParsedArgs, name: string): string | undefined {
  const value = args.options.get(name);
  if (value === true) throw new UsageError(`--${name} needs a value`);
  return value;
}

/** `--limit` and `--cursor` of a paged listing. */
function pageOptions(args: ParsedArgs): { limit?: number; cursor?: string } {
  const limitText = optionalText(args, 'limit');
  return {
    limit: limitText === undefined ? undefined : integerArg(limitText, '--limit', (n) => n > 0, 'a positive integer'),
    cursor: optionalText(args, 'cursor'),
  };
}

/** The customer controls and the admin's views of accounts (README "Admin CLI"). */
const CONTROL_COMMANDS: CommandSpec[] = [
  {
    name: 'set-controls',
    summary: "Set an account's daily spending cap, low-balance threshold and webhook URL (\"none\" clears one).",
    positionals: ['ACCOUNT_ID'],
    options: [
      { name: 'daily-credit-limit', value: 'N|none', description: 'credits the account may be charged per UTC day' },
      { name: 'low-balance-threshold', value: 'N|none', description: 'a balance.low event when a charge takes the balance below this' },
      { name: 'webhook-url', value: 'URL|none', description: 'where account events are POSTed (a public http(s) address)' },
    ],
    examples: ['set-controls 0b6c2b8e-3f1e-4c4a-9a57-3d8b7f6f2a11 --daily-credit-limit 5000 --low-balance-threshold 1000 --webhook-url https://example.com/hooks'],
    prepare(args) {
      const [accountId] = args.positionals;
      const webhook = optionalText(args, 'webhook-url');
      const changes = {
        daily_credit_limit: creditsOrNone(args.options.get('daily-credit-limit'), '--daily-credit-limit'),
        low_balance_threshold: creditsOrNone(args.options.get('low-balance-threshold'), '--low-balance-threshold'),
        webhook_url: webhook === 'none' ? null : webhook,
      };
      if (Object.values(changes).every((value) => value === undefined)) {
        throw new UsageError('give at least one of --daily-credit-limit, --low-balance-threshold, --webhook-url');
      }
      return async (admin, actor) => accountOutput(await admin.updateAccountControls(accountId, changes, actor));
    },
  },
  {
    name: 'list-accounts',
    summary: 'List accounts, newest first, a page at a time; filter by name, plan, disabled, balance below N.',
    positionals: [],
    options: [
      { name: 'name', value: 'TEXT', description: 'name contains this (any case)' },
      { name: 'plan', value: 'PLAN', description: 'on this plan' },
      { name: 'disabled', value: 'yes|no', description: 'disabled or not' },
      { name: 'balance-below', value: 'N', description: 'balance below N credits' },
      { name: 'limit', value: 'N', description: 'accounts per page (default 50, at most 200)' },
      { name: 'cursor', value: 'CURSOR', description: 'next_cursor of the previous page' },
    ],
    examples: ['list-accounts --plan standard --balance-below 1000', 'list-accounts --name acme --json'],
    prepare(args) {
      const disabledText = optionalText(args, 'disabled');
      if (disabledText !== undefined && disabledText !== 'yes' && disabledText !== 'no') throw new UsageError('--disabled must be yes or no');
      const balanceText = optionalText(args, 'balance-below');
      const query = {
        name: optionalText(args, 'name'),
        plan: optionalText(args, 'plan'),
        disabled: disabledText === undefined ? undefined : disabledText === 'yes',
        balance_below: balanceText === undefined ? undefined : integerArg(balanceText, '--balance-below', (n) => n >= 0, 'an integer >= 0'),
        ...pageOptions(args),
      };
      return async (admin) => {
        const page = await admin.listAccounts(query);
        const rows = page.accounts.map((a) => [a.id, a.name, a.plan, a.balance, a.disabled ? 'yes' : 'no', a.created_at]);
        const text = table(['account_id', 'name', 'plan', 'balance', 'disabled', 'created_at'], rows);
        return { json: page, text: page.next_cursor ? `${text}\nnext page: --cursor ${page.next_cursor}` : text };
      };
    },
  },
  {
    name: 'usage',
    summary: "Show an account's credits ledger, newest first, as the customer sees it.",
    positionals: ['ACCOUNT_ID'],
    options: [
      { name: 'limit', value: 'N', description: 'entries per page (default 50, at most 100)' },
      { name: 'cursor', value: 'CURSOR', description: 'next_cursor of the previous page' },
    ],
    examples: ['usage 0b6c2b8e-3f1e-4c4a-9a57-3d8b7f6f2a11 --limit 20'],
    prepare(args) {
      const [accountId] = args.positionals;
      const query = pageOptions(args);
      return async (admin) => {
        const page = await admin.accountUsage(accountId, query);
        const rows = page.entries.map((e) => [e.id, e.type, e.amount, e.balance_after, e.phone ?? '', e.source ?? '', e.created_at]);
        const text = table(['id', 'type', 'amount', 'balance_after', 'phone', 'source', 'created_at'], rows);
        return { json: page, text: page.next_cursor ? `${text}\nnext page: --cursor ${page.next_cursor}` : `${text}\n${lines([['entries', rows.length]])}` };
      };
    },
  },
  {
    name: 'erase',
    summary: 'Erase a phone number from every store (docs/privacy.md); the audit trail keeps only its keyed hash.',
    positionals: ['PHONE'],
    options: [],
    examples: ['erase +447400123456', 'erase "+44 7400 123456" --json'],
    prepare(args) {
      const [phone] = args.positionals;
      // Loaded here: the phone rules bring libphonenumber's metadata, which --help has no use for.
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { E164_MESSAGE, normalizePhone } = require('../../src/common/phone') as typeof import('../../src/common/phone');
      if (normalizePhone(phone) === undefined) throw new UsageError(E164_MESSAGE);
      return async (admin, actor) => {
        const erased = await admin.erase(phone, actor);
        return { json: erased, text: lines(Object.entries(erased)) };
      };
    },
  },
];

/** Every command of the admin CLI. */
export const COMMANDS: CommandSpec[] = [...ACCOUNT_COMMANDS, ...CONTROL_COMMANDS];
