import { colonCount, duplicateKey } from './json-duplicate-keys';

describe('duplicateKey', () => {
  it.each([
    ['{"phone":"+447400123456","phone":"+447400123457"}', 'phone'],
    ['{"phone":"a","source":"b","phone":"c"}', 'phone'],
    ['{"checks":{"line_type":true,"line_type":false}}', 'checks.line_type'],
    ['{"phones":[{"a":1},{"b":1,"b":2}]}', 'phones[1].b'],
    ['[{"x":{"y":[1,{"z":1,"z":1}]}}]', '[0].x.y[1].z'],
    ['{"a":1,"\\u0061":2}', 'a'],
    ['{ "a" : 1 , "b" : { "a" : 1 } , "a" : 2 }', 'a'],
  ])('%s has "%s" twice', (text, path) => {
    expect(duplicateKey(text)).toBe(path);
  });

  it.each([
    '{"phone":"+447400123456"}',
    '{"url":"https://example.com:8443/a\\":b","x":{"url":1}}',
    '{"a":{"a":{"a":1}},"b":[{"a":1},{"a":2}]}',
    '{"\\"a":1,"a":2}',
    '[]',
    '"a:b"',
  ])('%s has none', (text) => {
    expect(duplicateKey(text)).toBeNull();
  });
});

describe('colonCount', () => {
  it('counts every colon byte, in strings too (a key has exactly one after it)', () => {
    expect(colonCount(Buffer.from('{"phone":"+4474"}'))).toBe(1);
    expect(colonCount(Buffer.from('{"u":"https://a:1"}'))).toBe(3);
    expect(colonCount(Buffer.from('[]'))).toBe(0);
  });
});
