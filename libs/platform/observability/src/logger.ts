import { LoggerService } from '@nestjs/common';
import pino, { Logger } from 'pino';
import { currentRequestId } from './request-context';

let root: Logger | undefined;

/** One JSON logger per process; every line carries the service name and the current request id. */
export function rootLogger(level = process.env['LOG_LEVEL'] ?? 'info'): Logger {
  root ??= pino({
    level,
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    mixin: () => {
      const requestId = currentRequestId();
      return requestId ? { request_id: requestId } : {};
    },
    redact: { paths: ['authorization', '*.authorization', 'key', '*.key', 'secret', '*.secret'], censor: '[redacted]' },
  });
  return root;
}

export function serviceLogger(service: string): Logger {
  return rootLogger().child({ service });
}

/** Adapts pino to NestJS's logger interface so framework messages are JSON lines too. */
export class NestPinoLogger implements LoggerService {
  constructor(private readonly logger: Logger) {}

  log(message: unknown, context?: string) {
    this.logger.info({ context }, String(message));
  }
  error(message: unknown, trace?: string, context?: string) {
    this.logger.error({ context, trace }, message instanceof Error ? message.message : String(message));
  }
  warn(message: unknown, context?: string) {
    this.logger.warn({ context }, String(message));
  }
  debug(message: unknown, context?: string) {
    this.logger.debug({ context }, String(message));
  }
  verbose(message: unknown, context?: string) {
    this.logger.trace({ context }, String(message));
  }
}
