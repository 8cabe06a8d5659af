import { ArgumentMetadata, Injectable, ValidationError, ValidationPipe } from '@nestjs/common';
import { getMetadataStorage, IsDefined, ValidateIf } from 'class-validator';
import { AppError } from './errors';
import { refuseUnsafeInput } from './raw-input';

/**
 * Turns class-validator's tree into one sentence per mistaken field, naming the field and the rule it
 * broke first (missing, then wrong type, then the rest): `{"phon": …}` is one mistake, not five.
 * An unknown field close to a known one says "did you mean", and one that belongs to a nested object
 * (settings' `line_type` under `checks`) says where it goes; the known field it was meant to be is then
 * not reported again as missing.
 */
export function describeValidationErrors(errors: ValidationError[], parent = ''): string[] {
  const meant = new Set<string>();
  const unknown = new Map<ValidationError, string>();
  for (const error of errors) {
    if (!error.constraints?.whitelistValidation) continue;
    const field = parent ? `${parent}.${error.property}` : error.property;
    const hint = unknownFieldHint(error.property, error.target);
    if (hint?.meant) meant.add(hint.meant);
    unknown.set(error, `unknown field "${field}"${hint ? `: ${hint.text}` : ''}`);
  }
  return errors.flatMap((error) => {
    const field = parent ? `${parent}.${error.property}` : error.property;
    if (unknown.has(error)) return [unknown.get(error)!];
    if (meant.has(error.property)) return [];
    const rule = firstBroken(error.constraints);
    const own = rule ? [error.constraints![rule].replace(error.property, field)] : [];
    return [...own, ...describeValidationErrors(error.children ?? [], field)];
  });
}

/** The one message of a refused body: its sentences joined, ended once (`did you mean "phone"?`, not `?.`). */
export function validationMessage(errors: ValidationError[]): string {
  const text = describeValidationErrors(errors).join('; ');
  return /[.?!…]$/.test(text) ? text : `${text}.`;
}

/** Which broken rule speaks for a field: a missing field is not also "not a string" or "too long". */
const RULES_FIRST = ['isDefined', 'isString', 'isBoolean', 'isInt', 'isNumber', 'isObject', 'isArray', 'nestedValidation', 'isIn', 'isEnum'];

function firstBroken(constraints: Record<string, string> | undefined): string | undefined {
  const rules = Object.keys(constraints ?? {});
  return RULES_FIRST.find((rule) => rules.includes(rule)) ?? rules[0];
}

/** A DTO's class, as class-validator's metadata storage and `design:type` know it. */
// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type -- class-validator's own parameter type
type DtoClass = Function;

/**
 * The fields a DTO class accepts (what the whitelist allows), and those a class whose keys are data
 * (e.g. settings' checks, from the check registry) names with a static `knownFields()`.
 */
function knownFields(dto: DtoClass): string[] {
  const declared = getMetadataStorage().getTargetValidationMetadatas(dto, '', true, false).map((rule) => rule.propertyName);
  const dynamic = (dto as { knownFields?: () => readonly string[] }).knownFields?.() ?? [];
  return [...new Set([...declared, ...dynamic])];
}

function unknownFieldHint(name: string, target: unknown): { text: string; meant?: string } | undefined {
  const dto = (target as object | undefined)?.constructor;
  if (!dto || dto === Object) return undefined;
  const known = knownFields(dto);
  for (const field of known) {
    const nested = Reflect.getMetadata('design:type', dto.prototype, field) as DtoClass | undefined;
    if (nested && nested !== Object && knownFields(nested).includes(name)) {
      return { text: `it belongs under "${field}": {"${field}": {"${name}": …}}` };
    }
  }
  const closest = closestField(name, known);
  return closest ? { text: `did you mean "${closest}"?`, meant: closest } : undefined;
}

/** The known field an unknown name is a near miss of (for "did you mean"), if any. */
export function closestField(name: string, known: readonly string[]): string | undefined {
  return known
    .map((field) => ({ field, distance: editDistance(name.toLowerCase(), field.toLowerCase()) }))
    .filter(({ distance }) => distance <= Math.max(1, Math.floor(name.length / 3)))
    .sort((a, b) => a.distance - b.distance)[0]?.field;
}

/** Levenshtein distance (insertions, deletions, substitutions), for "did you mean". */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length];
}

/**
 * A field that may be left out but is never null: `@IsOptional()` lets null through as if absent,
 * and a null that reaches the service becomes a NOT NULL violation or a TypeError (a 500). Absent:
 * not validated; null: 400 naming the field. Fields where null means "clear it" keep `@IsOptional()`.
 */
export function OptionalNotNull(): PropertyDecorator {
  return (target, key) => {
    ValidateIf((object: Record<string | symbol, unknown>) => object[key] !== undefined)(target, key);
    IsDefined({ message: ({ property }) => `${property} must not be null (leave it out to keep its value)` })(target, key);
  };
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
      // target: the DTO instance, so an unknown field can be compared with the fields of its class (never sent).
      validationError: { target: true, value: false },
      exceptionFactory: (errors) => new AppError('INVALID_REQUEST', validationMessage(errors)),
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
