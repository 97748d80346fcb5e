import { ArgumentMetadata, Injectable, PipeTransform } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { validate, ValidationError } from 'class-validator';
import { FieldProblem } from '@parley/contracts';
import { AppError } from '@parley/rpc';

/** Kept importable from here; the shared field validators live in `./validators`. */
export { IsMetadata } from './validators';

const UNKNOWN = 'whitelistValidation';

/** `languages.0.code` → `languages[0].code`, the path form used in every `errors[].field`. */
export function fieldPath(parent: string, property: string): string {
  if (/^\d+$/.test(property)) return `${parent}[${property}]`;
  return parent ? `${parent}.${property}` : property;
}

function collect(errors: ValidationError[], parent = '', unknown: string[] = [], invalid: FieldProblem[] = []) {
  for (const e of errors) {
    const path = fieldPath(parent, e.property);
    for (const [name, message] of Object.entries(e.constraints ?? {})) {
      if (name === UNKNOWN) unknown.push(path);
      else invalid.push({ field: path, message: message.replace(/^\S+ /, '') });
    }
    collect(e.children ?? [], path, unknown, invalid);
  }
  return { unknown, invalid };
}

/**
 * Validates request bodies against their DTO class. Unknown fields are refused with 400 `invalid_request`
 * naming every one (nested by dotted path); otherwise every invalid field is reported at once with 422.
 */
@Injectable()
export class BodyValidationPipe implements PipeTransform {
  async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (metadata.type !== 'body' || !metadata.metatype || metadata.metatype === Object) return value;
    const body = value ?? {};
    if (typeof body !== 'object' || Array.isArray(body)) {
      throw new AppError('invalid_request', 'The body must be a JSON object.');
    }
    const instance = plainToInstance(metadata.metatype, body) as object;
    const { unknown, invalid } = collect(
      await validate(instance, { whitelist: true, forbidNonWhitelisted: true, forbidUnknownValues: false, stopAtFirstError: true }),
    );
    if (unknown.length) {
      throw new AppError(
        'invalid_request',
        `Unknown field${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}.`,
        unknown.map((field) => ({ field, message: 'is not a known field' })),
      );
    }
    if (invalid.length) throw AppError.validation(invalid);
    return instance;
  }
}
