/** A command-line usage problem: exit code 2, with the usage of the command on stderr. */
export class UsageError extends Error {}

export interface OptionSpec {
  name: string;
  /** Shown in help as `--name VALUE`; absent for a flag. */
  value?: string;
  description: string;
  required?: boolean;
}

export interface ParsedArgs {
  positionals: string[];
  options: Map<string, string | true>;
}

/**
 * `--name value`, `--name=value` and flags; everything else is positional, negative numbers
 * included (so `adjust ID -50 --reason R` reads as written). Unknown options are usage errors.
 */
export function parseArgs(argv: string[], specs: OptionSpec[]): ParsedArgs {
  const positionals: string[] = [];
  const options = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (arg === '-h') {
      options.set('help', true);
      continue;
    }
    if (!arg.startsWith('--')) {
      if (/^-[^\d]/.test(arg)) throw new UsageError(`unknown option ${arg}`);
      positionals.push(arg);
      continue;
    }
    const [name, inline] = splitOnce(arg.slice(2), '=');
    const spec = specs.find((candidate) => candidate.name === name);
    if (!spec) throw new UsageError(`unknown option --${name}`);
    if (!spec.value) {
      if (inline !== undefined) throw new UsageError(`--${name} takes no value`);
      options.set(name, true);
      continue;
    }
    const value = inline ?? argv[++i];
    if (value === undefined || (inline === undefined && value.startsWith('--'))) throw new UsageError(`--${name} needs a value (${spec.value})`);
    if (options.has(name)) throw new UsageError(`--${name} given twice`);
    options.set(name, value);
  }
  return { positionals, options };
}

function splitOnce(text: string, separator: string): [string, string | undefined] {
  const at = text.indexOf(separator);
  return at < 0 ? [text, undefined] : [text.slice(0, at), text.slice(at + 1)];
}

/** A whole number written in decimal, e.g. `500` or `-20`; anything else is a usage error naming the argument. */
export function integerArg(value: string, label: string, rule: (n: number) => boolean, ruleText: string): number {
  if (!/^-?\d{1,16}$/.test(value)) throw new UsageError(`${label} must be ${ruleText}, got "${value}"`);
  const number = Number(value);
  if (!Number.isSafeInteger(number) || !rule(number)) throw new UsageError(`${label} must be ${ruleText}, got "${value}"`);
  return number;
}
