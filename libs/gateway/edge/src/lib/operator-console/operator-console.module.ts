import { Module } from '@nestjs/common';
import { OperatorConsoleController } from './operator-console.controller';

/** The operator console page, beside the dev phone: a page on the gateway, built on the embed client. */
@Module({ controllers: [OperatorConsoleController] })
export class OperatorConsoleModule {}
