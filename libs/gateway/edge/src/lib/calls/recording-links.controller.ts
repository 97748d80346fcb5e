import { Controller, Get, Param, Query, Res } from '@nestjs/common';
import { ApiOkResponse, ApiProduces, ApiQuery, ApiTags } from '@nestjs/swagger';
import { FastifyReply } from 'fastify';
import { AppError } from '@parley/rpc';
import { Operation } from '../http/operation';
import { Recordings } from './recordings';

@ApiTags('Calls')
@Controller('recordings')
export class RecordingLinksController {
  constructor(private readonly recordings: Recordings) {}

  @Get(':file')
  @Operation({
    summary: 'Play a recording through a signed link',
    description: 'The link `GET /v1/calls/{id}/recording_url` hands out; 401 once it has expired.',
    permission: 'public',
    query: ['token'],
  })
  @ApiQuery({ name: 'token', required: true, schema: { type: 'string' } })
  @ApiProduces('audio/wav')
  @ApiOkResponse({ description: 'The recording.', content: { 'audio/wav': { schema: { type: 'string', format: 'binary' } } } })
  async play(@Param('file') file: string, @Query('token') token: string | undefined, @Res() reply: FastifyReply): Promise<void> {
    const callId = /^(call_[A-Za-z0-9]+)\.wav$/.exec(file)?.[1];
    if (!callId) throw AppError.notFound('recording');
    await this.recordings.send(reply, callId, this.recordings.keyFromLink(callId, token ?? ''));
  }
}
