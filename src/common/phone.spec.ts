import { maskPhone, normalizePhone } from './phone';

describe('normalizePhone', () => {
  it.each([
    ['+14155552671', '+14155552671'],
    ['+1 (415) 555-2671', '+14155552671'],
    ['+44.7400.123456', '+447400123456'],
    ['+12', '+12'],
    ['+123456789012345', '+123456789012345'],
  ])('accepts %p as %p', (raw, e164) => expect(normalizePhone(raw)).toBe(e164));

  it.each(['14155552671', '+0123456', '+1', '+1234567890123456', '', '+', '++14155552671', '+1415555267a', '+1_415', '+1/415', '＋14155552671', '+١٤١٥'])(
    'refuses %p',
    (raw) => expect(normalizePhone(raw)).toBeUndefined(),
  );
});

describe('maskPhone', () => {
  it.each([
    ['+14155552671', '+1415555****'],
    ['+447400123456', '+44740012****'],
    ['+123', '+12*'],
    ['+12345', '+12***'],
  ])('masks %p as %p', (e164, masked) => expect(maskPhone(e164)).toBe(masked));
});
