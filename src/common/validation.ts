import { ArgumentMetadata, Injectable, ValidationError, ValidationPipe } from '@nestjs/common';
import { AppError } from './errors';
import { refuseUnsafeInput } from './raw-input';

/** Turns class-validator's tree into one sentence per problem, each naming the field and the rule. */
export function describeValidationErrors(errors: ValidationError[], parent = ''): string[] {
  return errors.flatMap((error) => {
    const field = parent ? `${parent}.${error.property}` : error.property;
    const own = Object.entries(error.constraints ?? {}).map(([rule, text]) =>
      rule === 'whitelistValidation' ? `unknown field "${field}"` : text.replace(error.property, field),
    );
    return [...own, ...describeValidationErrors(error.children ?? [], field)];
  });
}

/**
 * The global validation pipe: unknown fields are refused, types are strict (no "1" for 1), and
 * every failure becomes 400 INVALID_REQUEST with a message naming the field and the rule. Before
 * anything else, every body, query and path parameter passes the one raw-input rule (no control
 * characters, no prototype keys), so no route can forget it and nothing reaches the database first.
 */
@Injectable()
export class StrictValidationPipe extends ValidationPipe {
  constructor() {
    super({
      whitelist: true,
      forbidNonWhitelisted: true,
      forbidUnknownValues: true,
      transform: true,
      transformOptions: { enableImplicitConversion: false },
      validationError: { target: false, value: false },
      exceptionFactory: (errors) => new AppError('INVALID_REQUEST', `${describeValidationErrors(errors).join('; ')}.`),
    });
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (metadata.type !== 'custom') refuseUnsafeInput(value, metadata.data);
    if (metadata.type === 'body' && metadata.metatype && this.toValidate(metadata)) {
      if (value === undefined || value === null || typeof value !== 'object' || Array.isArray(value)) {
        throw new AppError('INVALID_REQUEST', 'The request body must be a JSON object.');
      }
    }
    return super.transform(value, metadata);
  }
}
