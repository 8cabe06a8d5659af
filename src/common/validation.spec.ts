import { plainToInstance } from 'class-transformer';
import { validate } from 'class-validator';
import { FilterRequestDto } from '../filter/dto/filter.dto';
import { UpdateSettingsDto } from '../settings/dto/settings.dto';
import { E164_MESSAGE, e164Message } from './phone';
import { describeValidationErrors, editDistance, validationMessage } from './validation';

/** What the global pipe would answer for this body (its options: whitelist, forbid unknown, target kept). */
async function messages(dto: new () => object, body: object): Promise<string[]> {
  const errors = await validate(plainToInstance(dto, body), { whitelist: true, forbidNonWhitelisted: true, validationError: { target: true, value: false } });
  return describeValidationErrors(errors);
}

describe('validation messages: one per mistaken field, with the way out', () => {
  it.each([
    [FilterRequestDto, { phon: '+447400123456' }, ['unknown field "phon": did you mean "phone"?']],
    [FilterRequestDto, { phone: '+447400123456', sorce: 'crm' }, ['unknown field "sorce": did you mean "source"?']],
    [FilterRequestDto, {}, ['phone is required']],
    [FilterRequestDto, { phone: 12 }, ['phone must be a string']],
    [FilterRequestDto, { phone: '+447400123456', colour: 'red' }, ['unknown field "colour"']],
    [UpdateSettingsDto, { line_type: true }, ['unknown field "line_type": it belongs under "checks": {"checks": {"line_type": …}}']],
    [UpdateSettingsDto, { checks: { line_typ: true } }, ['unknown field "checks.line_typ": did you mean "line_type"?']],
  ])('%p %j → %j', async (dto, body, expected) => {
    expect(await messages(dto, body)).toEqual(expected);
  });

  it('a 00 number: write it with "+" and its country code; a national one: write it as +44…; neither repeats the number', async () => {
    const international = await messages(FilterRequestDto, { phone: '0044 20 7946 0958' });
    expect(international).toEqual([expect.stringContaining('write it with "+" instead of 00, as +44…')]);
    const national = await messages(FilterRequestDto, { phone: '020 7946 0958' });
    expect(national).toEqual([expect.stringContaining('write it as +44…')]);
    for (const message of [...international, ...national]) expect(message).not.toMatch(/7946/);
    expect(e164Message('001 415 555 2671')).toContain('as +1…');
    expect(e164Message('hello')).toBe(E164_MESSAGE);
  });

  it('the answer is one sentence, ended once: no "?." after "did you mean", no "…." after "+44…"', async () => {
    const refused = async (dto: new () => object, body: object) =>
      validationMessage(await validate(plainToInstance(dto, body), { whitelist: true, forbidNonWhitelisted: true, validationError: { target: true, value: false } }));
    expect(await refused(FilterRequestDto, { phon: '+447400123456' })).toBe('unknown field "phon": did you mean "phone"?');
    expect(await refused(FilterRequestDto, { phone: '0044 20 7946 0958' })).toMatch(/as \+44…$/);
    expect(await refused(FilterRequestDto, { phone: 12 })).toBe('phone must be a string.');
    expect(await refused(FilterRequestDto, { phone: 12, colour: 'red' })).toBe('unknown field "colour"; phone must be a string.');
  });

  it('edit distance', () => {
    expect(editDistance('phon', 'phone')).toBe(1);
    expect(editDistance('sorce', 'source')).toBe(1);
    expect(editDistance('colour', 'phone')).toBeGreaterThan(2);
  });
});
