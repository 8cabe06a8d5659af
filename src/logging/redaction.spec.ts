import { maskFields, maskPhonesIn, maskText, redactLiteralSecrets } from './redaction';

describe('maskPhonesIn', () => {
  it.each([
    ['lookup of +447700900123 failed', 'lookup of +44770090**** failed'],
    ['/api/v1/x/%2B447700900123?a=1', '/api/v1/x/%2B44770090****?a=1'],
    ['/api/v1/x/%2b14155552671', '/api/v1/x/%2b1415555****'],
    ['two: +14155552671,+447400120003', 'two: +1415555****,+44740012****'],
    ['short +1234567', 'short +123****'],
    // Written with separators, or URL-encoded with them (the review's `?phone=%2B44%207400%20123456`):
    ['number +44 7400 123456.', 'number +44740012****.'],
    ['?phone=%2B44%207400%20123456&x=1', '?phone=%2B44740012****&x=1'],
    ['?phone=%2b44+7400+123456', '?phone=%2b44740012****'],
    ['+1 (415) 555-2671', '+1415555****'],
    ['+44.7400.123.456', '+44740012****'],
    ['%2B1%20%28415%29%20555%2D2671', '%2B1415555****'],
    ['call +44 7400 123456, or +1 415 555 2671', 'call +44740012****, or +1415555****'],
  ])('masks %j', (text, expected) => {
    expect(maskPhonesIn(text)).toBe(expected);
  });

  it.each(['request 550e8400-e29b-41d4-a716-446655440000 took 12 ms', 'charge 1234567890123 settled', 'duration +12 ms', '+1415555****'])(
    'leaves %j alone',
    (text) => {
      expect(maskPhonesIn(text)).toBe(text);
    },
  );

  it('masks string fields and keeps the others', () => {
    expect(maskFields({ url: '/x/+14155552671', status: 200 })).toEqual({ url: '/x/+1415555****', status: 200 });
  });

  it('masks the string fields of nested objects (an error and its cause)', () => {
    expect(maskFields({ err: { message: 'x +44 7400 123456', cause: { detail: '(+14155552671)' } } })).toEqual({
      err: { message: 'x +44740012****', cause: { detail: '(+1415555****)' } },
    });
  });
});

describe('maskText: whole secrets of every format the service issues', () => {
  afterEach(() => redactLiteralSecrets([]));

  it.each([
    // base64url webhook secrets contain '-' and '_': the whole secret goes, not only up to the first one.
    ['whsec_Ab3-_xY9Zk1pN6tY0bRm4LxW9cJ2hF7d', 'whsec_Ab3-_xY9Zk1pN6tY0bRm4LxW9cJ2hF7d'],
    ['whsec_-leadingDash_andUnderscores-_-zz', 'whsec_-leadingDash_andUnderscores-_-zz'],
    ['pf_live_9fQ2xL7mB4vT1cN8rZ3kW6yH0dJ5sPaE', 'pf_live_9fQ2xL7mB4vT1cN8rZ3kW6yH0dJ5sPaE'],
  ])('removes %s whole, wherever it sits', (secret) => {
    for (const text of [`Failing row contains (7, t, f, ${secret}, null).`, `"${secret}"`, `x${secret}y`, `key=${secret}&a=1`]) {
      const masked = maskText(text);
      const body = secret.slice(secret.indexOf('_', secret.startsWith('pf_live_') ? 3 : 0) + 1);
      for (const piece of body.split(/[-_]/).filter((p) => p.length >= 3)) expect(masked).not.toContain(piece);
      expect(masked).toMatch(/(whsec|pf_live)_\[redacted\]/);
    }
  });

  it('removes the deployment tokens (ADMIN_TOKEN) by value', () => {
    redactLiteralSecrets(['admin-token-with-dashes_0123', undefined]);
    expect(maskText('Bearer admin-token-with-dashes_0123 refused')).toBe('Bearer [redacted] refused');
  });
});

describe('maskFields: a driver error is logged without the data it carries', () => {
  it('drops PostgreSQL detail, where and parameters, on the error and its driverError, and keeps the code', () => {
    const secret = 'whsec_Ab3-_xY9Zk1pN6tY0bRm4LxW9cJ2hF7d';
    const driver = { severity: 'ERROR', code: '23502', message: 'null value in column "x"', detail: `Failing row contains (1, ${secret}).`, where: 'SQL function', table: 'account_settings' };
    const logged = maskFields({ err: { type: 'QueryFailedError', code: '23502', detail: driver.detail, parameters: [secret], driverError: { ...driver, parameters: [secret] } } });
    expect(JSON.stringify(logged)).not.toMatch(/Failing row|xY9Zk1|SQL function/);
    expect(logged.err).toMatchObject({ code: '23502', driverError: { code: '23502', table: 'account_settings' } });
  });
});
