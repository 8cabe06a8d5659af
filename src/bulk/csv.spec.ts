import { csvCell, toCsv } from './csv';

describe('csvCell', () => {
  it.each([
    ['plain', 'plain'],
    ['', ''],
    [null, ''],
    [true, 'true'],
    [4, '4'],
    ['a,b', '"a,b"'],
    ['say "hi"', '"say ""hi"""'],
    ['two\nlines', '"two\nlines"'],
    [' padded ', '" padded "'],
    ['+447400123456', '+447400123456'],
    ['=1+1', "'=1+1"],
    ['+1+cmd|calc', "'+1+cmd|calc"],
    ['-2', "'-2"],
    ['@SUM(A1)', "'@SUM(A1)"],
    ['\tx', "'\tx"],
    ['=HYPERLINK("http://x","y")', '"\'=HYPERLINK(""http://x"",""y"")"'],
  ] as const)('%j → %s', (value, expected) => {
    expect(csvCell(value)).toBe(expected);
  });
});

describe('toCsv', () => {
  it('writes a header row and CRLF line ends', () => {
    expect(toCsv(['a', 'b'], [['1', null], ['x,y', false]])).toBe('a,b\r\n1,\r\n"x,y",false\r\n');
  });
});
