import { integerArg, OptionSpec, parseArgs, UsageError } from './args';

const SPECS: OptionSpec[] = [
  { name: 'reason', value: 'TEXT', description: '' },
  { name: 'json', description: '' },
  { name: 'help', description: '' },
];

describe('admin CLI argument parser', () => {
  it.each([
    [['ID', '-50', '--reason', 'fix'], ['ID', '-50'], { reason: 'fix' }],
    [['ID', '--reason=a=b', '--json', '7'], ['ID', '7'], { reason: 'a=b', json: true }],
    [['-h'], [], { help: true }],
    [['--', '--json'], ['--json'], {}],
  ])('reads %j', (argv, positionals, options) => {
    const parsed = parseArgs(argv, SPECS);
    expect(parsed.positionals).toEqual(positionals);
    expect(Object.fromEntries(parsed.options)).toEqual(options);
  });

  it.each([
    [['--colour', 'red'], 'unknown option --colour'],
    [['-x'], 'unknown option -x'],
    [['--reason'], '--reason needs a value (TEXT)'],
    [['--reason', '--json'], '--reason needs a value (TEXT)'],
    [['--json=yes'], '--json takes no value'],
    [['--reason', 'a', '--reason', 'b'], '--reason given twice'],
  ])('refuses %j with a usage error', (argv, message) => {
    expect(() => parseArgs(argv, SPECS)).toThrow(new UsageError(message));
  });

  it.each([
    ['500', 500],
    ['-20', -20],
  ])('reads the integer %p', (text, value) => {
    expect(integerArg(text, 'AMOUNT', () => true, 'an integer')).toBe(value);
  });

  it.each(['1.5', '1e3', '', 'ten', '0x10', '99999999999999999'])('refuses the integer %p', (text) => {
    expect(() => integerArg(text, 'AMOUNT', () => true, 'an integer')).toThrow(UsageError);
  });
});
