/**
 * The admin command line: `npm run admin -- <command> [arguments] [--json]`.
 * Same AdminService (and audit trail) as the HTTP admin API. Exit codes: 0 done, 1 the operation
 * failed (unknown id, refused adjustment, database unreachable...), 2 usage error.
 */
import { userInfo } from 'node:os';
import type { AdminActor } from '../src/admin/admin.service';
import { OptionSpec, parseArgs, UsageError } from './admin-cli/args';
import { CommandSpec, GLOBAL_OPTIONS } from './admin-cli/commands';
import { COMMANDS } from './admin-cli/control-commands';

const PROGRAM = 'npm run admin --';
const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

async function main(argv: string[]): Promise<number> {
  const json = argv.includes('--json');
  const commandIndex = argv.findIndex((arg) => !arg.startsWith('-'));
  const command = commandIndex < 0 ? undefined : COMMANDS.find((candidate) => candidate.name === argv[commandIndex]);
  if (commandIndex < 0) {
    const wantsHelp = argv.includes('--help') || argv.includes('-h');
    (wantsHelp ? process.stdout : process.stderr).write(globalHelp());
    return wantsHelp ? EXIT.ok : EXIT.usage;
  }
  if (!command) return usageFailure(`unknown command "${argv[commandIndex]}"`, undefined, json);

  let operation;
  try {
    const args = parseArgs([...argv.slice(0, commandIndex), ...argv.slice(commandIndex + 1)], [...command.options, ...GLOBAL_OPTIONS]);
    if (args.options.has('help')) {
      process.stdout.write(commandHelp(command));
      return EXIT.ok;
    }
    if (args.positionals.length !== command.positionals.length) {
      const expected = command.positionals.length === 0 ? 'no arguments' : command.positionals.join(' ');
      throw new UsageError(`expected ${expected}, got ${args.positionals.length === 0 ? 'none' : args.positionals.join(' ')}`);
    }
    for (const option of command.options) {
      if (option.required && !args.options.has(option.name)) throw new UsageError(`--${option.name} is required`);
    }
    operation = command.prepare(args);
  } catch (error) {
    if (error instanceof UsageError) return usageFailure(error.message, command, json);
    throw error;
  }

  try {
    // Loaded only now: --help and usage errors answer at once, without loading Nest and TypeORM.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { withAdminService } = require('./admin-cli/admin-context') as typeof import('./admin-cli/admin-context');
    const output = await withAdminService((admin) => operation(admin, cliActor()));
    process.stdout.write(`${json ? JSON.stringify(output.json, null, 2) : output.text}\n`);
    return EXIT.ok;
  } catch (error) {
    const code = isAppError(error) ? error.code : 'FAILED';
    const message = error instanceof Error && error.message ? error.message : String(error);
    process.stderr.write(json ? `${JSON.stringify({ error: { code, message } })}\n` : `error: ${message}\n`);
    return EXIT.failed;
  }
}

/** AppError without importing it before it is needed: its module brings @nestjs/common, which --help has no use for. */
function isAppError(error: unknown): error is import('../src/common/errors').AppError {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return error instanceof (require('../src/common/errors') as typeof import('../src/common/errors')).AppError;
}

function usageFailure(message: string, command: CommandSpec | undefined, json: boolean): number {
  if (json) {
    process.stderr.write(`${JSON.stringify({ error: { code: 'USAGE', message } })}\n`);
  } else {
    const usage = command ? `usage: ${PROGRAM} ${usageLine(command)}\nSee "${PROGRAM} ${command.name} --help".` : `See "${PROGRAM} --help".`;
    process.stderr.write(`error: ${message}\n${usage}\n`);
  }
  return EXIT.usage;
}

/** The audit trail and the ledger name the operating-system user who ran the command. */
function cliActor(): AdminActor {
  let user: string;
  try {
    user = userInfo().username;
  } catch {
    user = `uid-${process.getuid?.() ?? 'unknown'}`;
  }
  return { name: `cli:${user}` };
}

function usageLine(command: CommandSpec): string {
  const options = command.options.map((option) => {
    const text = `--${option.name}${option.value ? ` ${option.value}` : ''}`;
    return option.required ? text : `[${text}]`;
  });
  return [command.name, ...command.positionals, ...options, '[--json]'].join(' ');
}

function optionLines(options: OptionSpec[]): string {
  const rows = options.map((option) => [`--${option.name}${option.value ? ` ${option.value}` : ''}`, option.description]);
  const width = Math.max(...rows.map(([left]) => left.length));
  return rows.map(([left, right]) => `  ${left.padEnd(width)}  ${right}`).join('\n');
}

function commandHelp(command: CommandSpec): string {
  return [
    `usage: ${PROGRAM} ${usageLine(command)}`,
    '',
    command.summary,
    '',
    'options:',
    optionLines([...command.options, ...GLOBAL_OPTIONS]),
    '',
    'example:',
    ...command.examples.map((example) => `  ${PROGRAM} ${example}`),
    '',
  ].join('\n');
}

function globalHelp(): string {
  const width = Math.max(...COMMANDS.map((command) => command.name.length));
  return [
    `usage: ${PROGRAM} <command> [arguments] [--json]`,
    '',
    'Administers Phone Filter accounts, keys, credits and plans through the same service as the',
    'admin HTTP API (every change is written to the audit trail). Uses DATABASE_URL, or the embedded',
    'database in .data/pg (shared with a running service) when it is unset.',
    '',
    'commands:',
    ...COMMANDS.map((command) => `  ${command.name.padEnd(width)}  ${command.summary}`),
    '',
    'options:',
    optionLines(GLOBAL_OPTIONS),
    '',
    `"${PROGRAM} <command> --help" describes one command. Exit codes: 0 done, 1 operation failed, 2 usage error.`,
    '',
  ].join('\n');
}

// Exits when the command is done: a pool or client a failed start-up left open must not keep it waiting.
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(EXIT.failed);
  },
);
