import { applyDecorators } from '@nestjs/common';
import { Transform } from 'class-transformer';
import { ValidateBy } from 'class-validator';
import { e164Message, isE164, normalizePhone } from './phone';

/**
 * A phone number field: separators are dropped (normalised) when what remains is E.164, then the
 * E.164 rule of common/phone.ts is checked; the handler receives the normalised number.
 */
export function IsPhone(): PropertyDecorator {
  return applyDecorators(
    Transform(({ value }) => (typeof value === 'string' ? (normalizePhone(value) ?? value) : value)),
    ValidateBy({
      name: 'isPhone',
      validator: { validate: (value: unknown) => typeof value === 'string' && isE164(value), defaultMessage: (args) => e164Message(args?.value) },
    }),
  );
}
