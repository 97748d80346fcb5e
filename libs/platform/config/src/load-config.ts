import { plainToInstance } from 'class-transformer';
import { getMetadataStorage, validateSync, ValidationError } from 'class-validator';

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

function flatten(errors: ValidationError[]): string[] {
  return errors.flatMap((e) => [
    ...Object.values(e.constraints ?? {}).map((message) => `${e.property}: ${message}`),
    ...flatten(e.children ?? []),
  ]);
}

/**
 * Reads and validates configuration once, at boot. Property names are the environment variable names, defaults
 * are the property initialisers; every problem is collected so an operator fixes them all in one go.
 */
export function loadConfig<T extends object>(cls: new () => T, env: NodeJS.ProcessEnv = process.env): T {
  const declared = getMetadataStorage()
    .getTargetValidationMetadatas(cls, '', true, false)
    .map((m) => m.propertyName);
  const known = [...new Set([...Object.keys(new cls()), ...declared])];
  const present = Object.fromEntries(known.filter((k) => env[k] !== undefined && env[k] !== '').map((k) => [k, env[k]]));
  const config = plainToInstance(cls, present, { enableImplicitConversion: true, exposeDefaultValues: true });
  const problems = flatten(validateSync(config, { forbidUnknownValues: false }));
  if (problems.length) throw new ConfigError(problems);
  return config;
}
