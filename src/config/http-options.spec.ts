import { parseCorsOrigins, parseTrustProxy } from './http-options';

describe('parseTrustProxy', () => {
  it.each([
    ['false', false],
    ['FALSE', false],
    ['true', true],
    ['1', 1],
    ['2', 2],
    ['loopback', ['loopback']],
    ['loopback, uniquelocal', ['loopback', 'uniquelocal']],
    ['10.0.0.0/8,172.16.0.0/12', ['10.0.0.0/8', '172.16.0.0/12']],
    ['192.168.1.10', ['192.168.1.10']],
    ['::1,fc00::/7', ['::1', 'fc00::/7']],
  ])('reads %j as %j', (raw, expected) => {
    expect(parseTrustProxy(raw)).toEqual(expected);
  });

  it.each(['yes', 'everything', '10.0.0.0/33', '10.0.0/8', 'loopback,nope', '-1', '1.5', '', '10.0.0.0/8/1'])('refuses %j', (raw) => {
    expect(parseTrustProxy(raw)).toBeUndefined();
  });
});

describe('parseCorsOrigins', () => {
  it.each([
    ['*', '*'],
    ['https://app.example.com', ['https://app.example.com']],
    ['https://a.example.com, http://localhost:5173', ['https://a.example.com', 'http://localhost:5173']],
  ])('reads %j as %j', (raw, expected) => {
    expect(parseCorsOrigins(raw)).toEqual(expected);
  });

  it.each(['https://app.example.com/', 'app.example.com', 'ftp://x.example.com', '*,https://a.example.com', ' , ', 'https://a.example.com/path'])(
    'refuses %j (origins only: scheme, host and port)',
    (raw) => {
      expect(parseCorsOrigins(raw)).toBeUndefined();
    },
  );
});
