import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ERROR_STATUS } from './errors';
import { BODY_PARSER_ANSWERS, bodyParserAnswer, BodyParserError, depthExceeds } from './json-body';

function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
}

describe('depthExceeds', () => {
  it.each([
    [1, false],
    [32, false],
    [33, true],
    [100_000, true],
  ])('a body nested %i levels exceeds 32: %p', (depth, expected) => {
    expect(depthExceeds(nested(depth), 32)).toBe(expected);
  });

  it('counts arrays as levels too, and ignores scalars', () => {
    expect(depthExceeds('x', 0)).toBe(false);
    expect(depthExceeds([[[1]]], 2)).toBe(true);
    expect(depthExceeds({ phone: '+1', checks: { a: true } }, 2)).toBe(false);
  });
});

describe('body parser errors', () => {
  /** Every `type: '...'` the installed body-parser and raw-body can raise, read from their sources. */
  function parserErrorTypes(): string[] {
    const files = [
      ...readdirSync(dirname(require.resolve('body-parser/lib/read'))).map((f) => join(dirname(require.resolve('body-parser/lib/read')), f)),
      ...readdirSync(join(dirname(require.resolve('body-parser/lib/read')), 'types')).map((f) => join(dirname(require.resolve('body-parser/lib/read')), 'types', f)),
      require.resolve('raw-body'),
    ].filter((file) => file.endsWith('.js'));
    const types = files.flatMap((file) => [...readFileSync(file, 'utf8').matchAll(/type: (?:err\.type \|\| )?'([a-z.]+)'/g)].map((m) => m[1]));
    return [...new Set(types)].sort();
  }

  it('knows every error type the installed parsers raise (an upgrade adding one fails here)', () => {
    const types = parserErrorTypes();
    expect(types.length).toBeGreaterThanOrEqual(8);
    expect(types.filter((type) => !(type in BODY_PARSER_ANSWERS))).toEqual([]);
  });

  it.each(Object.keys(BODY_PARSER_ANSWERS))('answers %s as the client\'s error: 400, or 413 when too large', (type) => {
    const { code } = bodyParserAnswer(new BodyParserError(Object.assign(new Error('x'), { type, status: 500 })));
    expect(ERROR_STATUS[code]).toBe(type === 'entity.too.large' || type === 'parameters.too.many' ? 413 : 400);
  });

  it.each([
    ['a zlib error without a type (bad gzip)', Object.assign(new Error('incorrect header check'), { status: 400, code: 'Z_DATA_ERROR' }), 400],
    ['a brotli error', Object.assign(new Error('Decompression failed'), { status: 400, code: 'ERR__ERROR_FORMAT_PADDING_1' }), 400],
    ['something without status or type', new Error('?'), 400],
    ['an unknown type of status 413', Object.assign(new Error('x'), { type: 'new.kind', status: 413 }), 413],
    ['not even an Error', 'a string', 400],
  ])('answers %s as the client\'s error', (_name, error, status) => {
    expect(ERROR_STATUS[bodyParserAnswer(new BodyParserError(error)).code]).toBe(status);
  });
});
