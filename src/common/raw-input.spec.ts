import { AppError } from './errors';
import { refuseUnsafeInput } from './raw-input';

function problem(value: unknown, root?: string): string | undefined {
  try {
    refuseUnsafeInput(value, root);
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe('INVALID_REQUEST');
    return (error as AppError).message;
  }
}

describe('refuseUnsafeInput: the one rule for raw client input', () => {
  it.each([
    [{ phone: '+447400123456', source: 'web' }],
    [{ checks: { line_type: true }, phones: ['+1 415 555 2671', '(020) 7946 0018'] }],
    [{ reason: 'invoice 117 — café, ünïcode, emoji 📞' }],
    [['a', 1, null, true, { x: 'y' }]],
  ])('lets %j through', (value) => {
    expect(problem(value)).toBeUndefined();
  });

  it.each(Array.from({ length: 32 }, (_, code) => code))('refuses U+%s in a string, naming the field', (code) => {
    expect(problem({ name: `a${String.fromCharCode(code)}b` })).toMatch(new RegExp(`^name contains a control character \\(U\\+${code.toString(16).toUpperCase().padStart(4, '0')}\\)`));
  });

  it.each([
    [{ checks: { portability: 'x\u0000' } }, /^checks\.portability contains/],
    [{ phones: ['+1', '+2\u0000'] }, /^phones\[1\] contains/],
    [{ a: [{ b: [{ c: '\u001f' }] }] }, /^a\[0\]\.b\[0\]\.c contains/],
    [{ 'bad\u0000key': 1 }, /^the name of field "bad.key" contains/],
  ])('names the field deep in %j', (value, message) => {
    expect(problem(value)).toMatch(message);
  });

  it.each([
    [{ name: 'evil\ud800' }, /^name is not well-formed Unicode/],
    [{ reason: '\udc00tail' }, /^reason is not well-formed Unicode/],
    [{ phones: ['+1', 'x\udbff'] }, /^phones\[1\] is not well-formed Unicode/],
    [{ ['key\ud800']: 1 }, /^the name of field "key.*" is not well-formed Unicode/],
  ])('refuses a lone surrogate in %j, naming the field', (value, message) => {
    expect(problem(value)).toMatch(message);
  });

  it('lets a surrogate pair (an emoji) through', () => {
    expect(problem({ name: 'call \ud83d\udcde' })).toBeUndefined();
  });

  it('names a path or query parameter by its name', () => {
    expect(problem('\u0000', 'name')).toMatch(/^name contains a control character \(U\+0000\)/);
    expect(problem({ target_id: '\u0000' })).toMatch(/^target_id contains/);
  });

  it.each([
    ['{"constructor":{"x":1}}', 'constructor'],
    ['{"__proto__":{"x":1}}', '__proto__'],
    ['{"prototype":1}', 'prototype'],
    ['{"checks":{"__proto__":{"line_type":true}}}', 'checks.__proto__'],
    ['{"a":[{"constructor":1}]}', 'a[0].constructor'],
  ])('refuses the prototype key of %s as an unknown field', (json, field) => {
    expect(problem(JSON.parse(json))).toBe(`unknown field "${field}".`);
  });

  it('walks a hostile depth without overflowing the stack', () => {
    let deep: unknown = '\u0000';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(problem(deep)).toMatch(/contains a control character/);
  });
});
