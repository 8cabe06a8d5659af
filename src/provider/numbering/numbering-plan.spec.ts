import { describeNumber, originalCarrier, toLineType } from './numbering-plan';
import { LineType } from '../port/lookup.types';

describe('describeNumber (libphonenumber max metadata)', () => {
  const table: Array<[e164: string, region: string, lineType: LineType]> = [
    ['+12015550123', 'US', 'FIXED_LINE_OR_MOBILE'],
    ['+14155552671', 'US', 'FIXED_LINE_OR_MOBILE'],
    ['+18002345678', 'US', 'TOLL_FREE'],
    ['+19002345678', 'US', 'PREMIUM_RATE'],
    ['+15002345678', 'US', 'PERSONAL_NUMBER'],
    ['+16135550123', 'CA', 'FIXED_LINE_OR_MOBILE'],
    ['+525512345678', 'MX', 'FIXED_LINE_OR_MOBILE'],
    ['+447400123456', 'GB', 'MOBILE'],
    ['+441212345678', 'GB', 'FIXED_LINE'],
    ['+448001234567', 'GB', 'TOLL_FREE'],
    ['+449012345678', 'GB', 'PREMIUM_RATE'],
    ['+445612345678', 'GB', 'VOIP'],
    ['+447012345678', 'GB', 'PERSONAL_NUMBER'],
    ['+447640123456', 'GB', 'PAGER'],
    ['+445512345678', 'GB', 'UAN'],
    ['+4915123456789', 'DE', 'MOBILE'],
    ['+4930123456', 'DE', 'FIXED_LINE'],
    ['+498001234567', 'DE', 'TOLL_FREE'],
    ['+499001234567', 'DE', 'PREMIUM_RATE'],
    ['+4916412345', 'DE', 'PAGER'],
    ['+33612345678', 'FR', 'MOBILE'],
    ['+33123456789', 'FR', 'FIXED_LINE'],
    ['+33801234567', 'FR', 'TOLL_FREE'],
    ['+33891123456', 'FR', 'PREMIUM_RATE'],
    ['+33912345678', 'FR', 'VOIP'],
    ['+33810123456', 'FR', 'SHARED_COST'],
    ['+34612345678', 'ES', 'MOBILE'],
    ['+34810123456', 'ES', 'FIXED_LINE'],
    ['+34900123456', 'ES', 'TOLL_FREE'],
    ['+393123456789', 'IT', 'MOBILE'],
    ['+390212345678', 'IT', 'FIXED_LINE'],
    ['+39899123456', 'IT', 'PREMIUM_RATE'],
    ['+819012345678', 'JP', 'MOBILE'],
    ['+81312345678', 'JP', 'FIXED_LINE'],
    ['+81120123456', 'JP', 'TOLL_FREE'],
    ['+815012345678', 'JP', 'VOIP'],
    ['+61412345678', 'AU', 'MOBILE'],
    ['+61212345678', 'AU', 'FIXED_LINE'],
    ['+611800123456', 'AU', 'TOLL_FREE'],
    ['+919123456789', 'IN', 'MOBILE'],
    ['+5511961234567', 'BR', 'MOBILE'],
    ['+551123456789', 'BR', 'FIXED_LINE'],
    ['+31612345678', 'NL', 'MOBILE'],
    ['+31201234567', 'NL', 'FIXED_LINE'],
    ['+41781234567', 'CH', 'MOBILE'],
    ['+41878123456', 'CH', 'PERSONAL_NUMBER'],
    ['+27711234567', 'ZA', 'MOBILE'],
    ['+46701234567', 'SE', 'MOBILE'],
    ['+353851234567', 'IE', 'MOBILE'],
  ];

  it('covers at least 30 numbers across at least 10 countries', () => {
    expect(table.length).toBeGreaterThanOrEqual(30);
    expect(new Set(table.map(([, region]) => region)).size).toBeGreaterThanOrEqual(10);
  });

  it.each(table)('%s is a valid %s number of type %s', (e164, region, lineType) => {
    expect(describeNumber(e164)).toEqual({ region, validForPlan: true, lineType });
  });

  it.each([
    ['+10000000000', null],
    ['+441632960000', null],
    ['+49123', 'DE'],
    ['+3312', 'FR'],
    ['+999123456789', null],
  ])('%s is not valid for its numbering plan (region %s)', (e164, region) => {
    expect(describeNumber(e164)).toEqual({ region, validForPlan: false, lineType: 'UNKNOWN' });
  });

  it('gives a non-geographic number (+800) no region', () => {
    expect(describeNumber('+80012345678')).toEqual({ region: null, validForPlan: true, lineType: 'TOLL_FREE' });
  });

  it.each(['', '14155552671', '+', 'not a number', '+1 415 555 2671x'])('rejects %j without throwing', (input) => {
    expect(describeNumber(input).validForPlan).toBe(false);
  });
});

describe('originalCarrier (Google carrier data)', () => {
  it.each([
    ['+447400123456', 'Three'],
    ['+4915123456789', 'T-Mobile'],
    ['+33612345678', 'SFR'],
    ['+819012345678', 'KDDI'],
    ['+31612345678', 'KPN'],
  ])('%s was allocated to %s', async (e164, name) => {
    await expect(originalCarrier(e164)).resolves.toBe(name);
  });

  it.each(['+14155552671', '+4930123456', '+10000000000', 'garbage'])('knows no operator for %s', async (e164) => {
    await expect(originalCarrier(e164)).resolves.toBeNull();
  });
});

describe('toLineType', () => {
  it.each([
    ['MOBILE', 'MOBILE'],
    ['FIXED_LINE_OR_MOBILE', 'FIXED_LINE_OR_MOBILE'],
    ['VOICEMAIL', 'VOICEMAIL'],
    [undefined, 'UNKNOWN'],
    ['SOMETHING_NEW', 'UNKNOWN'],
  ])('maps %s to %s', (input, expected) => {
    expect(toLineType(input)).toBe(expected);
  });
});
