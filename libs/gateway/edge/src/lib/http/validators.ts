import { applyDecorators } from '@nestjs/common';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  ArrayUnique,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsNumber,
  IsObject,
  IsString,
  isURL,
  Length,
  Matches,
  Max,
  MaxLength,
  Min,
  registerDecorator,
  ValidateIf,
  ValidateNested,
} from 'class-validator';

/*
 * Shape validators shared by the request DTOs. Every message starts with `$property`: BodyValidationPipe drops the
 * first word, so `errors[].message` reads "must be …" beside its `field`. Composite decorators apply their parts
 * in a fixed order (type first), which matters because the pipe stops at the first failed check of each field.
 */

type Decorator = PropertyDecorator;
type ClassRef = () => new (...args: never[]) => object;

/** A one-off custom check; `message` starts with `$property` (BodyValidationPipe drops the first word). */
export function Satisfies(name: string, validate: (value: unknown) => boolean, message: string): Decorator {
  return (target: object, propertyName: string | symbol) =>
    registerDecorator({ name, target: target.constructor, propertyName: propertyName as string, options: { message }, validator: { validate } });
}

/** The field may be absent; `null` is checked like any other value (and so refused as the wrong type). */
export function Optional(): Decorator {
  return ValidateIf((_object: object, value: unknown) => value !== undefined);
}

/** The field may be absent or `null`, both meaning none; any other value is checked. */
export function OptionalOrNull(): Decorator {
  return ValidateIf((_object: object, value: unknown) => value !== undefined && value !== null);
}

export interface TextOptions {
  /** Shortest accepted length; 0 (the default) accepts the empty string. */
  min?: number;
  /** A pattern the whole value must match, and how to say so in the message. */
  pattern?: RegExp;
  patternHint?: string;
}

/** A string of at most `max` characters (and at least `options.min`). */
export function IsText(max: number, options: TextOptions = {}): Decorator {
  const { min = 0, pattern, patternHint = `match ${pattern}` } = options;
  return applyDecorators(
    IsString({ message: '$property must be a string' }),
    min > 0
      ? Length(min, max, { message: `$property must be between ${min} and ${max} characters long` })
      : MaxLength(max, { message: `$property must be at most ${max} characters long` }),
    ...(pattern ? [Matches(pattern, { message: `$property must be ${patternHint}` })] : []),
  );
}

/** An absolute URL (any scheme; which schemes are allowed is decided by the service) or the empty string. */
export function IsUrlOrEmpty(max: number): Decorator {
  return applyDecorators(
    IsText(max),
    check(
      'isUrlOrEmpty',
      (value) => value === '' || isURL(value as string, { require_protocol: true, require_tld: false }),
      '$property must be an absolute URL such as https://example.com/hook',
    ),
  );
}

export function IsOneOf(values: readonly string[]): Decorator {
  return IsIn([...values], { message: `$property must be one of: ${values.join(', ')}` });
}

export function IsFlag(): Decorator {
  return IsBoolean({ message: '$property must be true or false' });
}

export interface ListOptions {
  maxItems: number;
  minItems?: number;
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

function listShape({ maxItems, minItems = 0 }: ListOptions): Decorator[] {
  return [
    IsArray({ message: '$property must be an array' }),
    ...(minItems > 0 ? [ArrayMinSize(minItems, { message: `$property must have at least ${plural(minItems, 'item')}` })] : []),
    ArrayMaxSize(maxItems, { message: `$property must have at most ${maxItems} items` }),
  ];
}

/** An array of strings, each at most `maxLength` characters. */
export function IsTextList(options: ListOptions & { maxLength: number }): Decorator {
  return applyDecorators(
    ...listShape(options),
    IsString({ each: true, message: '$property must contain only strings' }),
    MaxLength(options.maxLength, { each: true, message: `$property items must be at most ${options.maxLength} characters long` }),
  );
}

/** An array of distinct values, each one of `values`. */
export function IsOneOfList(values: readonly string[]): Decorator {
  return applyDecorators(
    ...listShape({ maxItems: values.length }),
    IsIn([...values], { each: true, message: `$property items must each be one of: ${values.join(', ')}` }),
    ArrayUnique({ message: '$property must not repeat a value' }),
  );
}

/** A nested block, validated against `type` (so its unknown fields are reported by path). */
export function IsNested(type: ClassRef): Decorator {
  return applyDecorators(IsObject({ message: '$property must be an object' }), ValidateNested(), Type(type));
}

/** An array of nested blocks, each validated against `type`. */
export function IsNestedList(type: ClassRef, options: ListOptions): Decorator {
  return applyDecorators(
    ...listShape(options),
    IsObject({ each: true, message: '$property must contain only objects' }),
    ValidateNested({ each: true }),
    Type(type),
  );
}

function range(min: number, max: number | undefined): string {
  return max === undefined ? `at least ${min}` : `between ${min} and ${max}`;
}

function numeric(integer: boolean): Decorator {
  return integer
    ? IsInt({ message: '$property must be an integer' })
    : IsNumber({ allowNaN: false, allowInfinity: false }, { message: '$property must be a number' });
}

/** An integer in `min`..`max` (inclusive); without `max`, at least `min`. */
export function IsIntBetween(min: number, max?: number): Decorator {
  const message = `$property must be ${range(min, max)}`;
  return applyDecorators(numeric(true), Min(min, { message }), ...(max === undefined ? [] : [Max(max, { message })]));
}

/** A number (fractions allowed) in `min`..`max` inclusive. */
export function IsNumberBetween(min: number, max: number): Decorator {
  const message = `$property must be ${range(min, max)}`;
  return applyDecorators(numeric(false), Min(min, { message }), Max(max, { message }));
}

export interface ZeroOrOptions {
  /** Integers only (the default) or any number. */
  integer?: boolean;
  /** Also accept -1, meaning "never". */
  never?: boolean;
}

/**
 * "0 means the default": accepts 0, the range `min`..`max`, and with `never` also -1.
 * Message: "must be 0 (default) or between 1 and 10" / "must be -1 (never), 0 (default) or between 3 and 60".
 */
export function IsZeroOrBetween(min: number, max: number, { integer = true, never = false }: ZeroOrOptions = {}): Decorator {
  const accepted = `${never ? '-1 (never), ' : ''}0 (default) or between ${min} and ${max}`;
  return applyDecorators(
    numeric(integer),
    check(
      'isZeroOrBetween',
      (value) => typeof value === 'number' && (value === 0 || (never && value === -1) || (value >= min && value <= max)),
      `$property must be ${accepted}`,
    ),
  );
}

export interface MapLimits {
  maxEntries: number;
  keyMaxLength: number;
  /** Values are strings of at most this length… */
  valueMaxLength?: number;
  /** …or one of these. */
  values?: readonly string[];
}

function describeMap({ maxEntries, keyMaxLength, valueMaxLength, values }: MapLimits): string {
  const to = values ? `one of: ${values.join(', ')}` : `string values of at most ${valueMaxLength} chars`;
  return `must map at most ${maxEntries} keys (1-${keyMaxLength} chars) to ${to}`;
}

/** An object of string keys to string values (free text up to a length, or one of a fixed set). */
export function IsStringMap(limits: MapLimits): Decorator {
  const { maxEntries, keyMaxLength, valueMaxLength = Infinity, values } = limits;
  return check(
    'isStringMap',
    (value) =>
      typeof value === 'object' &&
      value !== null &&
      !Array.isArray(value) &&
      Object.keys(value).length <= maxEntries &&
      Object.entries(value).every(
        ([k, v]) =>
          k.length >= 1 &&
          k.length <= keyMaxLength &&
          typeof v === 'string' &&
          (values ? values.includes(v) : v.length <= valueMaxLength),
      ),
    `$property ${describeMap(limits)}`,
  );
}

/** OpenAPI schema of a map validated by `IsStringMap` with the same limits. */
export function mapSchema(limits: MapLimits, description: string) {
  const valueSchema = limits.values ? { type: 'string', enum: [...limits.values] } : { type: 'string', maxLength: limits.valueMaxLength };
  return {
    type: 'object',
    additionalProperties: valueSchema,
    maxProperties: limits.maxEntries,
    description,
  } as const;
}

/** OpenAPI schema of a list validated by `IsTextList` with the same limits. */
export function textListSchema(options: ListOptions & { maxLength: number }, description: string) {
  const { maxItems, minItems, maxLength } = options;
  return { type: 'array', items: { type: 'string', maxLength }, maxItems, ...(minItems ? { minItems } : {}), description } as const;
}

export const METADATA_LIMITS: MapLimits = { maxEntries: 50, keyMaxLength: 40, valueMaxLength: 500 };

/** `metadata`: string keys to string values (at most 50 pairs, keys ≤ 40 chars, values ≤ 500 chars). */
export function IsMetadata(): Decorator {
  return IsStringMap(METADATA_LIMITS);
}

/** A one-off custom check; `message` should start with `$property`. */
function check(name: string, validate: (value: unknown) => boolean, message: string): Decorator {
  return (target: object, propertyName: string | symbol) =>
    registerDecorator({
      name,
      target: target.constructor,
      propertyName: propertyName as string,
      options: { message },
      validator: { validate },
    });
}
