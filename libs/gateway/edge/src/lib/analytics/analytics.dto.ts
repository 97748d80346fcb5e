import { ApiProperty } from '@nestjs/swagger';
import { END_REASONS } from '@parley/contracts';

const DIRECTIONS = ['outbound', 'inbound', 'web'];
export const BUCKETS = ['minute', 'hour', 'day', 'week', 'month'] as const;

export class AnalyticsDurationDto {
  @ApiProperty({ type: 'integer', example: 812, description: 'Answered calls that ended: the calls these figures are of (a live call has no duration yet).' })
  calls: number;
  @ApiProperty({ type: 'number', nullable: true, example: 143.275, description: 'Mean seconds from the answer to the end, to the millisecond; null without such calls.' })
  average_seconds: number | null;
  @ApiProperty({ type: 'number', nullable: true, example: 118.5, description: 'Median (continuous percentile, interpolated) of the same durations.' })
  p50_seconds: number | null;
  @ApiProperty({ type: 'number', nullable: true, example: 402.1, description: '95th percentile (continuous, interpolated) of the same durations.' })
  p95_seconds: number | null;
}

export class AnalyticsCsatDto {
  @ApiProperty({ type: 'integer', example: 57, description: 'Ratings of the period’s calls, every source (`api`, `web`, `keypad`).' })
  count: number;
  @ApiProperty({
    type: 'number',
    nullable: true,
    example: 4.21,
    description: 'Mean rating on the 1..5 scale (a 10-scale score brought to 1..5 as in `csat.received`), to two decimals; null without ratings.',
  })
  average: number | null;
}

export class AnalyticsCostDto {
  @ApiProperty({ example: 'USD', description: 'The price table’s currency (`PRICES_FILE`; USD when none is configured).' }) currency: string;
  @ApiProperty({ example: 73.1042, description: 'Sum of the period’s calls’ costs (carrier, STT, LLM, TTS), to 6 decimals; live calls count with their cost so far.' })
  total: number;
  @ApiProperty({ type: 'number', nullable: true, example: 0.0731, description: '`total / calls`, to 6 decimals; null without calls.' })
  average_per_call: number | null;
}

export class AnalyticsLatencyDto {
  @ApiProperty({ type: 'integer', example: 5230, description: 'Agent turns with a measured response latency: answers to the caller’s speech (greetings and fixed lines are not).' })
  turns: number;
  @ApiProperty({ type: 'number', nullable: true, example: 780, description: 'Median of those turns’ latencies (end of the caller’s speech to the first agent audio), ms; null without turns.' })
  p50_ms: number | null;
  @ApiProperty({ type: 'number', nullable: true, example: 1420.5, description: '95th percentile (continuous, interpolated), ms; null without turns.' })
  p95_ms: number | null;
}

export class AnalyticsBargeInDto {
  @ApiProperty({ type: 'integer', example: 6100, description: 'Agent turns stored in the period’s calls’ transcripts.' }) agent_turns: number;
  @ApiProperty({ type: 'integer', example: 410, description: 'Of them, the turns the caller cut off (barge-ins; the turn is `interrupted`).' }) count: number;
  @ApiProperty({ type: 'number', nullable: true, example: 0.0672, description: '`count / agent_turns`, to four decimals; null without agent turns.' }) rate: number | null;
}

export class AnalyticsSuccessDto {
  @ApiProperty({
    type: 'integer',
    example: 640,
    description: 'Calls with a post-call success verdict (`successful` not null): their agent defines `post_call.success` and it was decided.',
  })
  evaluated: number;
  @ApiProperty({ type: 'integer', example: 512, description: 'Of them, the successful ones (`successful` true).' }) succeeded: number;
  @ApiProperty({ type: 'number', nullable: true, example: 0.8, description: '`succeeded / evaluated`, to four decimals; null when no call was evaluated.' })
  rate: number | null;
}

export class AnalyticsOverviewDto {
  @ApiProperty({ enum: ['analytics_overview'] }) object: 'analytics_overview';
  @ApiProperty({ format: 'date-time', example: '2026-01-01T00:00:00.000Z', description: 'Start of the period (inclusive), on `created_at`.' }) from: string;
  @ApiProperty({ format: 'date-time', example: '2026-01-31T00:00:00.000Z', description: 'End of the period (exclusive).' }) to: string;
  @ApiProperty({ type: 'string', nullable: true, example: null, description: 'The agent filter, if any.' }) agent_id: string | null;
  @ApiProperty({ type: 'string', nullable: true, enum: DIRECTIONS, example: null, description: 'The direction filter, if any.' }) direction: string | null;
  @ApiProperty({ type: 'string', nullable: true, example: null, description: 'The project filter, if any.' }) project_id: string | null;
  @ApiProperty({ type: 'integer', example: 1000, description: 'Calls created in the period (live ones included).' }) calls: number;
  @ApiProperty({ type: 'integer', example: 830, description: 'Of them, calls that were answered.' }) answered: number;
  @ApiProperty({ type: 'number', nullable: true, example: 0.83, description: '`answered / calls`, to four decimals; null without calls.' }) answer_rate: number | null;
  @ApiProperty({ type: 'number', example: 1940.25, description: 'Answered minutes: the sum of the answered calls’ durations (answer to end) over 60, to two decimals.' })
  minutes: number;
  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'integer' },
    example: { completed: 700, no_answer: 120, transferred: 30 },
    description: `Ended calls per \`end_reason\` (${END_REASONS.join(', ')}); reasons no call ended with are left out.`,
  })
  end_reasons: Record<string, number>;
  @ApiProperty({ type: AnalyticsDurationDto, description: 'Durations of the answered calls that ended, in seconds.' }) duration: AnalyticsDurationDto;
  @ApiProperty({ type: 'integer', example: 30, description: 'Answered calls put through elsewhere (`POST /v1/calls/{id}/transfer`, `call.transferred`).' })
  transferred: number;
  @ApiProperty({ type: 'number', nullable: true, example: 0.0361, description: '`transferred / answered`, to four decimals; null without answered calls.' })
  transfer_rate: number | null;
  @ApiProperty({ type: AnalyticsCsatDto, description: 'Satisfaction ratings of the period’s calls (`POST /v1/analytics/csat`, the keypad survey).' }) csat: AnalyticsCsatDto;
  @ApiProperty({ type: AnalyticsCostDto, description: 'What the period’s calls cost by the operator’s price table (docs/analytics.md, Cost).' }) cost: AnalyticsCostDto;
  @ApiProperty({ type: AnalyticsLatencyDto, description: 'Per-turn response latency: the engine’s voice-to-voice measurement, stored with each agent turn.' })
  response_latency: AnalyticsLatencyDto;
  @ApiProperty({ type: AnalyticsBargeInDto, description: 'How often callers cut the agent off.' }) barge_in: AnalyticsBargeInDto;
  @ApiProperty({ type: AnalyticsSuccessDto, description: 'Post-call success: the calls judged by their agent’s `post_call.success` (the call’s `successful`).' })
  success: AnalyticsSuccessDto;
}

export class AnalyticsBucketDto {
  @ApiProperty({ example: '2026-03-08T00:00:00-05:00', description: 'Start of the bucket: local time in `timezone`, with the zone’s offset at that instant (RFC 3339).' })
  start: string;
  @ApiProperty({ type: 'integer', example: 31 }) calls: number;
  @ApiProperty({ type: 'integer', example: 27 }) answered: number;
  @ApiProperty({ type: 'number', nullable: true, example: 0.871, description: 'Null without calls.' }) answer_rate: number | null;
  @ApiProperty({ type: 'number', example: 61.5 }) minutes: number;
  @ApiProperty({ type: 'integer', example: 1 }) transferred: number;
  @ApiProperty({ type: 'integer', example: 3, description: 'Ratings of the bucket’s calls.' }) csat_count: number;
  @ApiProperty({ type: 'number', nullable: true, example: 4.33, description: 'Null without ratings.' }) csat_average: number | null;
  @ApiProperty({ example: 2.2174, description: 'Sum of the bucket’s calls’ costs, to 6 decimals (the overview’s currency).' }) cost: number;
  @ApiProperty({ type: 'integer', example: 180, description: 'Agent turns of the bucket’s calls.' }) agent_turns: number;
  @ApiProperty({ type: 'integer', example: 12, description: 'Of them, the turns the caller cut off.' }) barge_ins: number;
  @ApiProperty({ type: 'integer', example: 20, description: 'The bucket’s calls judged successful (`successful` true).' }) successful: number;
}

export class AnalyticsTimeseriesDto {
  @ApiProperty({ enum: ['analytics_timeseries'] }) object: 'analytics_timeseries';
  @ApiProperty({ format: 'date-time', example: '2026-03-01T05:00:00.000Z' }) from: string;
  @ApiProperty({ format: 'date-time', example: '2026-03-31T04:00:00.000Z' }) to: string;
  @ApiProperty({ enum: BUCKETS, example: 'day' }) bucket: string;
  @ApiProperty({ example: 'America/New_York' }) timezone: string;
  @ApiProperty({ type: 'string', nullable: true, example: null }) agent_id: string | null;
  @ApiProperty({ type: 'string', nullable: true, enum: DIRECTIONS, example: null }) direction: string | null;
  @ApiProperty({ type: 'string', nullable: true, example: null }) project_id: string | null;
  @ApiProperty({
    type: [AnalyticsBucketDto],
    description: 'Every bucket from the one holding `from` to the one holding the instant before `to`, oldest first, zeros included. The first and last count only the period’s calls.',
  })
  data: AnalyticsBucketDto[];
}
