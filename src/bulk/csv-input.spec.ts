import { bulkEntriesFromCsv, parseCsv } from './csv-input';

describe('parseCsv', () => {
  it.each([
    ['a,b\r\n1,2\r\n', [[1, ['a', 'b']], [2, ['1', '2']]]],
    ['a,b\n1,2', [[1, ['a', 'b']], [2, ['1', '2']]]],
    ['\uFEFFphone\n+1\n', [[1, ['phone']], [2, ['+1']]]],
    ['a\n\n\nb\n', [[1, ['a']], [4, ['b']]]],
    ['"x, y","say ""hi"""\n', [[1, ['x, y', 'say "hi"']]]],
    ['"two\nlines",z\nnext\n', [[1, ['two\nlines', 'z']], [3, ['next']]]],
    ['a,,c\n', [[1, ['a', '', 'c']]]],
    ['a,\n', [[1, ['a', '']]]],
  ])('%j', (text, expected) => {
    expect(parseCsv(text).map((row) => [row.line, row.cells])).toEqual(expected);
  });

  it.each([
    ['a\n"open\n', /line 2: a quoted cell is not closed/],
    ['a\n"x"y\n', /line 2: text after a closing quote/],
    ['a\nx"y\n', /line 2: a quote inside an unquoted cell/],
  ])('refuses %j naming the line', (text, message) => {
    expect(() => parseCsv(text)).toThrow(message);
  });
});

describe('bulkEntriesFromCsv', () => {
  it('takes phone and reference by header name, in any order and case, ignoring other columns', () => {
    expect(bulkEntriesFromCsv('Name,Reference,PHONE\nAda,crm-1,+14155552671\nBob,,+447400123456\n', 10)).toEqual([
      { line: 2, phone: '+14155552671', reference: 'crm-1' },
      { line: 3, phone: '+447400123456' },
    ]);
  });

  it.each([
    ['', 10, /line 1: the file is empty/],
    ['number\n+1\n', 10, /line 1: the header row has no "phone" column/],
    ['phone,phone\n1,2\n', 10, /line 1: the header row names a column twice/],
    ['phone\n', 10, /line 2: no rows after the header/],
    ['phone\n1\n2\n3\n', 2, /line 4: more than 2 rows/],
    ['phone,reference\n1,a\n2\n', 10, /line 3: 1 cells where the header has 2/],
    [`phone,reference\n1,a\n2,${'x'.repeat(65)}\n`, 10, /line 3: the reference must be 1 to 64 printable characters/],
    ['phone,reference\n1,"a\tb"\n', 10, /line 2: the reference must be/],
  ])('refuses %j naming the line', (text, maxRows, message) => {
    expect(() => bulkEntriesFromCsv(text, maxRows)).toThrow(message);
  });
});

describe('a file whose line breaks were lost on the way (curl -d @file)', () => {
  it('says to send it with --data-binary', () => {
    // What `curl -d @examples/contacts.csv` sends: the lines glued together.
    const flattened = 'phone,reference+447400123456,crm-1842+447400120000,crm-1843';
    expect(() => bulkEntriesFromCsv(flattened, 10)).toThrow(/line breaks are missing: `curl -d @file` removes them; send the file with `--data-binary @file`/);
    expect(() => bulkEntriesFromCsv('phone\n', 10)).not.toThrow(/data-binary/);
  });
});
