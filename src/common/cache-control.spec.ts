import { MAX_AGE_CEILING, requestedMaxAge } from './cache-control';

describe('requestedMaxAge (the Cache-Control request header)', () => {
  it.each([
    [undefined, undefined],
    ['', undefined],
    ['no-cache', 0],
    ['No-Cache', 0],
    ['max-age=0', 0],
    ['max-age=3600', 3600],
    ['MAX-AGE=60', 60],
    ['max-age="120"', 120],
    [' max-age = 30 ', 30],
    ['no-store', undefined],
    ['no-transform, only-if-cached', undefined],
    ['max-age=600, no-cache', 0],
    ['max-age=600, max-age=60', 60],
    ['max-age=0, must-revalidate', 0],
    [['max-age=100', 'max-age=50'], 50],
    ['max-age=99999999999999', MAX_AGE_CEILING],
  ])('%j → %j', (header, expected) => {
    expect(requestedMaxAge(header)).toBe(expected);
  });

  it.each(['max-age=', 'max-age=-1', 'max-age=1.5', 'max-age=abc', 'max-age=1e3', 'max-age'])('refuses %j with INVALID_REQUEST naming max-age', (header) => {
    expect(() => requestedMaxAge(header)).toThrow(expect.objectContaining({ code: 'INVALID_REQUEST', message: expect.stringContaining('max-age') }));
  });
});
