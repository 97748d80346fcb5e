import { applyDecorators } from '@nestjs/common';
import { ArrayMaxSize, ArrayMinSize, ArrayUnique, IsArray, registerDecorator, ValidationArguments } from 'class-validator';
import { WEBHOOK_EVENT_TYPES } from '@parley/contracts';

/**
 * The families an endpoint may subscribe to: every dotted prefix of a known event type followed by `.*`
 * (`call.*`, `call.transcript.*`, `csat.*`, …). `call.*` matches the whole call family, however deep.
 */
export const WEBHOOK_EVENT_FAMILIES: readonly string[] = [
  ...new Set(
    WEBHOOK_EVENT_TYPES.flatMap((type) => {
      const parts = type.split('.');
      return parts.slice(1).map((_, i) => `${parts.slice(0, i + 1).join('.')}.*`);
    }),
  ),
];

/** Every accepted entry of an endpoint's `events`: `*`, a family, or an event type. */
export const WEBHOOK_EVENT_FILTERS: readonly string[] = ['*', ...WEBHOOK_EVENT_FAMILIES, ...WEBHOOK_EVENT_TYPES];

export const EVENTS_LIMITS = { minItems: 1, maxItems: 50 } as const;

/** True for `*`, a known event type, or a family of known event types such as `call.*`. */
export function isEventFilter(value: unknown): boolean {
  return typeof value === 'string' && WEBHOOK_EVENT_FILTERS.includes(value);
}

const show = (value: unknown) => (typeof value === 'string' ? `"${value}"` : (JSON.stringify(value) ?? String(value)));

/**
 * `events`: 1-50 distinct entries, each an event type of the catalogue, `*` (all), or a family such as `call.*`.
 * The message names the first entry refused. Like the shared validators, messages start with `$property`.
 */
export function IsEventFilterList(): PropertyDecorator {
  const { minItems, maxItems } = EVENTS_LIMITS;
  const entries: PropertyDecorator = (target: object, propertyName: string | symbol) =>
    registerDecorator({
      name: 'isEventFilterList',
      target: target.constructor,
      propertyName: propertyName as string,
      options: {
        message: (args: ValidationArguments) => {
          const bad = (args.value as unknown[]).find((entry) => !isEventFilter(entry));
          return (
            `${args.property} items must each be an event type (${WEBHOOK_EVENT_TYPES.join(', ')}), "*" ` +
            `or a family (${WEBHOOK_EVENT_FAMILIES.join(', ')}); ${show(bad)} is none of these`
          );
        },
      },
      validator: { validate: (value: unknown) => Array.isArray(value) && value.every(isEventFilter) },
    });
  return applyDecorators(
    IsArray({ message: '$property must be an array' }),
    ArrayMinSize(minItems, { message: `$property must have at least ${minItems} item` }),
    ArrayMaxSize(maxItems, { message: `$property must have at most ${maxItems} items` }),
    entries,
    ArrayUnique({ message: '$property must not repeat a value' }),
  );
}
