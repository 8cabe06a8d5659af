import { ArgumentMetadata, createParamDecorator, ExecutionContext, Injectable, PipeTransform } from '@nestjs/common';
import type { Request } from 'express';
import { AppError } from '../common/errors';
import { refuseUnsafeInput } from '../common/raw-input';
import { StrictValidationPipe } from '../common/validation';
import { bulkEntriesFromCsv } from './csv-input';
import { MAX_BULK_ENTRIES } from './dto/bulk.dto';

/**
 * The body of a bulk submission or quote as one plain object: the JSON body as sent, or for a
 * `text/csv` body its entries plus the query parameters. Either way it is then validated by the
 * same DTO (BulkBodyValidation), so both forms have the same rules and messages.
 */
export const BulkBody = createParamDecorator((_data: unknown, context: ExecutionContext): unknown => {
  const request = context.switchToHttp().getRequest<Request>();
  refuseUnsafeInput(request.query);
  if (typeof request.body !== 'string' || !request.is('text/csv')) {
    const sent = Object.keys(request.query);
    if (sent.length > 0) {
      throw new AppError('INVALID_REQUEST', `The query parameter "${sent[0]}" is for text/csv bodies only: send it as a field of the JSON body.`);
    }
    return request.body;
  }
  const entries = bulkEntriesFromCsv(request.body, MAX_BULK_ENTRIES).map(({ phone, reference }) =>
    reference === undefined ? phone : { phone, reference },
  );
  const options: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(request.query)) {
    // Unknown parameters are kept, so validation refuses them by name like unknown JSON fields.
    options[name] = queryValue(name, value);
  }
  return { ...options, phones: entries };
});

/** A query parameter as its JSON field would be: `max_age` a number, `risk` a boolean (`true` or `false`); anything else as sent, for validation to refuse. */
function queryValue(name: string, value: unknown): unknown {
  if (name === 'max_age' && typeof value === 'string' && /^\d{1,15}$/.test(value)) return Number(value);
  if (name === 'risk' && (value === 'true' || value === 'false')) return value === 'true';
  return value;
}

/** The global pipe skips custom decorators; this runs it on the body BulkBody built, as on any JSON body. */
@Injectable()
export class BulkBodyValidation implements PipeTransform {
  private readonly strict = new StrictValidationPipe();

  transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    return this.strict.transform(value, { ...metadata, type: 'body' });
  }
}


