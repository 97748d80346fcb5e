import { Body, Controller, HttpCode, Post, Res } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiTags } from '@nestjs/swagger';
import { FastifyReply } from 'fastify';
import { callsV1 } from '@parley/contracts';
import { Principal } from '../auth/api-keys.repository';
import { CurrentPrincipal } from '../auth/principal.decorator';
import { CallsClient } from '../calls/calls.client';
import { Operation } from '../http/operation';
import { CsatRatingDto, RecordCsatDto } from './csat.dto';

export function presentCsatRating(r: callsV1.Rating | undefined): CsatRatingDto {
  if (!r) throw new Error('the calls service answered without a rating');
  return {
    id: r.id,
    object: 'csat_rating',
    call_id: r.call_id,
    score: r.score,
    scale: r.scale,
    comment: r.comment || null,
    source: r.source,
    created_at: r.created_at,
  };
}

/** Satisfaction ratings of calls: owned by the calls service (they belong to the call). */
@ApiTags('Analytics')
@Controller('v1/analytics')
export class CsatController {
  constructor(private readonly calls: CallsClient) {}

  @Post('csat')
  @HttpCode(201)
  @Operation({
    summary: 'Record a satisfaction rating',
    description: [
      'Records a rating of a call (during or after it) and delivers `csat.received`. One rating per call and source:',
      'sending the same rating again (same `score`, `scale` and `comment`) answers the stored one with 200 and delivers nothing more,',
      'so a retry is safe without an Idempotency-Key; a different rating for the same call and source is 409 `conflict`.',
      '`score` must be within 1..`scale`. A call of another account is 404 `not_found`.',
    ].join(' '),
    permission: 'calls:write',
    problems: ['validation_error', 'not_found', 'conflict'],
  })
  @ApiCreatedResponse({ type: CsatRatingDto, description: 'Recorded.' })
  @ApiOkResponse({ type: CsatRatingDto, description: 'The call already had this rating from this source: the stored one.' })
  async record(@CurrentPrincipal() who: Principal, @Body() body: RecordCsatDto, @Res({ passthrough: true }) reply: FastifyReply): Promise<CsatRatingDto> {
    const request: callsV1.RecordRatingRequest = {
      account_id: who.accountId,
      call_id: body.call_id,
      source: body.source ?? 'api',
      scale: body.scale ?? 5,
      score: body.score,
      comment: body.comment ?? '',
    };
    const res = await this.calls.call('recordRating', (s, md) => s.recordRating(request, md));
    if (!res.created) reply.status(200);
    return presentCsatRating(res.rating);
  }
}
