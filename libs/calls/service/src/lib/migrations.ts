import { MigrationInterface, QueryRunner } from 'typeorm';
import { BusDeadLetters1764200000000, CreateOutbox1763700000000 } from '@parley/messaging';
import { AddCallAnalyticsAggregates1765900000600, AddCallAnalyticsSuccess1765900000610 } from './call-analytics.migrations';
import { CreateProjectSpend1765900000700, ProjectSpendStatementTriggers1765900000710 } from './project-spend.migrations';

export class CreateCalls1763700000301 implements MigrationInterface {
  name = 'CreateCalls1763700000301';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE IF NOT EXISTS calls (
        id text PRIMARY KEY,
        account_id text NOT NULL,
        agent_id text NOT NULL,
        direction text NOT NULL CHECK (direction IN ('outbound', 'inbound', 'web')),
        to_number text NOT NULL,
        from_number text NOT NULL,
        status text NOT NULL CHECK (status IN ('queued', 'ringing', 'in_progress', 'ended', 'failed')),
        end_reason text,
        failure_reason text,
        carrier text,
        carrier_call_id text,
        variables jsonb NOT NULL DEFAULT '{}',
        metadata jsonb NOT NULL DEFAULT '{}',
        turns int NOT NULL DEFAULT 0,
        recording_available boolean NOT NULL DEFAULT false,
        transcript_available boolean NOT NULL DEFAULT false,
        created_at timestamptz(3) NOT NULL,
        updated_at timestamptz(3) NOT NULL,
        answered_at timestamptz(3),
        ended_at timestamptz(3)
      )`);
    await q.query(`CREATE INDEX IF NOT EXISTS calls_listing ON calls (account_id, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX IF NOT EXISTS calls_live ON calls (account_id) WHERE status IN ('queued', 'ringing', 'in_progress')`);
    await q.query(`CREATE INDEX IF NOT EXISTS calls_stale ON calls (updated_at) WHERE status IN ('queued', 'ringing', 'in_progress')`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS calls`);
  }
}

/** Carrier and media: recordings, media liveness, transfers, transcript turns; one live call per carrier call id. */
export class AddCallMedia1763800000302 implements MigrationInterface {
  name = 'AddCallMedia1763800000302';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE calls
        ADD COLUMN IF NOT EXISTS recording_enabled boolean NOT NULL DEFAULT false,
        ADD COLUMN IF NOT EXISTS recording_key text,
        ADD COLUMN IF NOT EXISTS recording_content_type text,
        ADD COLUMN IF NOT EXISTS recording_duration_seconds double precision,
        ADD COLUMN IF NOT EXISTS last_media_at timestamptz(3),
        ADD COLUMN IF NOT EXISTS transferred_to text`);
    await q.query(`CREATE UNIQUE INDEX IF NOT EXISTS calls_carrier_call ON calls (carrier, carrier_call_id) WHERE carrier_call_id IS NOT NULL`);
    await q.query(`
      CREATE TABLE IF NOT EXISTS call_turns (
        call_id text NOT NULL REFERENCES calls (id) ON DELETE CASCADE,
        seq int NOT NULL,
        account_id text NOT NULL,
        role text NOT NULL CHECK (role IN ('user', 'assistant')),
        text text NOT NULL,
        language text NOT NULL DEFAULT '',
        start_ms bigint NOT NULL,
        end_ms bigint NOT NULL,
        interrupted boolean NOT NULL DEFAULT false,
        PRIMARY KEY (call_id, seq)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS call_turns`);
    await q.query(`DROP INDEX IF EXISTS calls_carrier_call`);
    await q.query(`
      ALTER TABLE calls DROP COLUMN IF EXISTS recording_enabled, DROP COLUMN IF EXISTS recording_key,
        DROP COLUMN IF EXISTS recording_content_type, DROP COLUMN IF EXISTS recording_duration_seconds,
        DROP COLUMN IF EXISTS last_media_at, DROP COLUMN IF EXISTS transferred_to`);
  }
}

/** The per-account do-not-call list: numbers whose callers opted out. */
export class CreateDoNotCall1763800000303 implements MigrationInterface {
  name = 'CreateDoNotCall1763800000303';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE IF NOT EXISTS do_not_call (
        account_id text NOT NULL,
        number text NOT NULL,
        call_id text,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        PRIMARY KEY (account_id, number)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS do_not_call`);
  }
}

/**
 * Post-call analysis written onto the call: the summary, the extracted fields, the model that produced them and
 * when; failed attempts are counted, and the last error is kept once the analysis was given up.
 */
export class AddCallAnalysis1763900000304 implements MigrationInterface {
  name = 'AddCallAnalysis1763900000304';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE calls
        ADD COLUMN IF NOT EXISTS summary text,
        ADD COLUMN IF NOT EXISTS extracted jsonb,
        ADD COLUMN IF NOT EXISTS analysis_model text,
        ADD COLUMN IF NOT EXISTS analysed_at timestamptz(3),
        ADD COLUMN IF NOT EXISTS analysis_attempts int NOT NULL DEFAULT 0,
        ADD COLUMN IF NOT EXISTS analysis_error text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE calls DROP COLUMN IF EXISTS summary, DROP COLUMN IF EXISTS extracted, DROP COLUMN IF EXISTS analysis_model,
        DROP COLUMN IF EXISTS analysed_at, DROP COLUMN IF EXISTS analysis_attempts, DROP COLUMN IF EXISTS analysis_error`);
  }
}

/**
 * The post-call analysis schedule, in the calls table itself: `analysis_due_at` is when the call's analysis is
 * next due (set by the transaction that ends an analysable call; pushed forward as a lease while an attempt runs
 * and as the back-off after a failure; cleared once analysed, given up or found to have nothing to do). Replaces
 * the `parley.domain.calls.call.ended` domain event: calls ended lately (the last day) and neither analysed nor
 * given up are scheduled now, and that event's unpublished outbox rows are retired.
 */
export class AddCallAnalysisSchedule1764000000305 implements MigrationInterface {
  name = 'AddCallAnalysisSchedule1764000000305';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE calls ADD COLUMN IF NOT EXISTS analysis_due_at timestamptz(3)`);
    await q.query(`CREATE INDEX IF NOT EXISTS calls_analysis_due ON calls (analysis_due_at) WHERE analysed_at IS NULL AND analysis_due_at IS NOT NULL`);
    await q.query(`
      UPDATE calls SET analysis_due_at = now()
       WHERE analysed_at IS NULL AND analysis_error IS NULL AND analysis_due_at IS NULL
         AND status IN ('ended', 'failed') AND (answered_at IS NOT NULL OR turns > 0) AND ended_at > now() - interval '1 day'`);
    await q.query(`
      UPDATE outbox SET published_at = now(), last_error = 'superseded by calls.analysis_due_at'
       WHERE subject = 'parley.domain.calls.call.ended' AND published_at IS NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS calls_analysis_due`);
    await q.query(`ALTER TABLE calls DROP COLUMN IF EXISTS analysis_due_at`);
  }
}

/** Who answered an outbound call, as the carrier's machine detection judged it. */
export class AddAnsweredBy1764000000306 implements MigrationInterface {
  name = 'AddAnsweredBy1764000000306';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE calls ADD COLUMN IF NOT EXISTS answered_by text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE calls DROP COLUMN IF EXISTS answered_by`);
  }
}

/** When the carrier reconciler last looked a live call up at its carrier (CarrierReconciler). */
export class AddCarrierCheckedAt1764000000310 implements MigrationInterface {
  name = 'AddCarrierCheckedAt1764000000310';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE calls ADD COLUMN IF NOT EXISTS carrier_checked_at timestamptz(3)`);
    await q.query(`CREATE INDEX IF NOT EXISTS calls_live_updated ON calls (updated_at) WHERE status IN ('queued', 'ringing', 'in_progress')`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS calls_live_updated`);
    await q.query(`ALTER TABLE calls DROP COLUMN IF EXISTS carrier_checked_at`);
  }
}

/**
 * Idempotent transcript appends: the media worker numbers the turns of its stream, and a call holds one turn per
 * (stream, number), so an append retried after a deadline is not stored twice.
 */
export class AddTurnStreamSeq1764000000320 implements MigrationInterface {
  name = 'AddTurnStreamSeq1764000000320';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE call_turns ADD COLUMN IF NOT EXISTS stream_id text, ADD COLUMN IF NOT EXISTS stream_seq int`);
    await q.query(`CREATE UNIQUE INDEX IF NOT EXISTS call_turns_stream_seq ON call_turns (call_id, stream_id, stream_seq) WHERE stream_seq IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS call_turns_stream_seq`);
    await q.query(`ALTER TABLE call_turns DROP COLUMN IF EXISTS stream_id, DROP COLUMN IF EXISTS stream_seq`);
  }
}

/** The Idempotency-Key of an outbound call's create, unique per account: a retried create finds its call. */
export class AddCallIdempotencyKey1764000000330 implements MigrationInterface {
  name = 'AddCallIdempotencyKey1764000000330';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE calls ADD COLUMN IF NOT EXISTS idempotency_key text`);
    await q.query(`CREATE UNIQUE INDEX IF NOT EXISTS calls_idempotency_key ON calls (account_id, idempotency_key) WHERE idempotency_key IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS calls_idempotency_key`);
    await q.query(`ALTER TABLE calls DROP COLUMN IF EXISTS idempotency_key`);
  }
}

export class CreateCallToolCalls1764100000350 implements MigrationInterface {
  name = 'CreateCallToolCalls1764100000350';

  async up(q: QueryRunner): Promise<void> {
    // The numbered tool-call reports a call has taken: a retried report is recognised by its key.
    await q.query(`CREATE TABLE IF NOT EXISTS call_tool_calls (
      call_id text NOT NULL,
      stream_id text NOT NULL,
      stream_seq int NOT NULL,
      PRIMARY KEY (call_id, stream_id, stream_seq)
    )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS call_tool_calls`);
  }
}

/** Where the media worker carrying the call takes commands (AttachMediaRequest.command_address), set on attach. */
export class AddCallMediaWorker1764300000360 implements MigrationInterface {
  name = 'AddCallMediaWorker1764300000360';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE calls ADD COLUMN IF NOT EXISTS media_worker text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE calls DROP COLUMN IF EXISTS media_worker`);
  }
}

/** Realtime tokens redeemed (WebCalls.join): a token opens one connection; rows outlive the tokens' 60 s window. */
export class CreateRealtimeTokens1764400000370 implements MigrationInterface {
  name = 'CreateRealtimeTokens1764400000370';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE IF NOT EXISTS realtime_tokens (
      jti text PRIMARY KEY,
      call_id text NOT NULL,
      redeemed_at timestamptz(3) NOT NULL DEFAULT now()
    )`);
    await q.query(`CREATE INDEX IF NOT EXISTS realtime_tokens_redeemed ON realtime_tokens (redeemed_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS realtime_tokens`);
  }
}

/** A rendezvous' seats (WebCalls.rendezvous): null on every other call. */
export class AddCallSeats1764500000380 implements MigrationInterface {
  name = 'AddCallSeats1764500000380';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE calls ADD COLUMN IF NOT EXISTS seats jsonb`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE calls DROP COLUMN IF EXISTS seats`);
  }
}

/**
 * Claims (issue 18): a call a person answers by claiming it (an inbound call to a `simple` agent, a rendezvous), who
 * claimed it and when. Every rendezvous is claimable; the partial index serves ListRinging.
 */
export class AddCallClaims1764600000390 implements MigrationInterface {
  name = 'AddCallClaims1764600000390';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE calls ADD COLUMN IF NOT EXISTS claimable boolean NOT NULL DEFAULT false`);
    await q.query(`ALTER TABLE calls ADD COLUMN IF NOT EXISTS claimed_by text`);
    await q.query(`ALTER TABLE calls ADD COLUMN IF NOT EXISTS claimed_at timestamptz(3)`);
    await q.query(`UPDATE calls SET claimable = true WHERE seats IS NOT NULL AND NOT claimable`);
    await q.query(`CREATE INDEX IF NOT EXISTS calls_ringing ON calls (account_id, created_at) WHERE status = 'ringing' AND claimable`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS calls_ringing`);
    await q.query(`ALTER TABLE calls DROP COLUMN IF EXISTS claimed_at`);
    await q.query(`ALTER TABLE calls DROP COLUMN IF EXISTS claimed_by`);
    await q.query(`ALTER TABLE calls DROP COLUMN IF EXISTS claimable`);
  }
}

/** Who said a turn, when the call's sides are people (a rendezvous seat's name); null on other calls' turns. */
export class AddTurnSpeaker1764700000410 implements MigrationInterface {
  name = 'AddTurnSpeaker1764700000410';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE call_turns ADD COLUMN IF NOT EXISTS speaker text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE call_turns DROP COLUMN IF EXISTS speaker`);
  }
}

/**
 * The moves of a call's conversation flow (RecordFlowTransition), in the order reported (`id`). Numbered like the
 * stream's turns: a retried report (the same stream and number) is stored once; unnumbered ones (seq 0) always.
 */
export class CreateCallFlowTransitions1764800000420 implements MigrationInterface {
  name = 'CreateCallFlowTransitions1764800000420';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE IF NOT EXISTS call_flow_transitions (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      call_id text NOT NULL REFERENCES calls (id) ON DELETE CASCADE,
      stream_id text NOT NULL,
      stream_seq int NOT NULL,
      from_node text NOT NULL,
      to_node text NOT NULL,
      kind text NOT NULL CHECK (kind IN ('start', 'intent', 'expression', 'always', 'event')),
      edge_index int NOT NULL,
      edge_when text,
      event text,
      captured jsonb,
      at_ms bigint NOT NULL,
      created_at timestamptz(3) NOT NULL DEFAULT now()
    )`);
    await q.query(`CREATE INDEX IF NOT EXISTS call_flow_transitions_call ON call_flow_transitions (call_id, id)`);
    await q.query(
      `CREATE UNIQUE INDEX IF NOT EXISTS call_flow_transitions_stream_seq ON call_flow_transitions (call_id, stream_id, stream_seq) WHERE stream_seq > 0`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS call_flow_transitions`);
  }
}

/**
 * Injected events no conversation took yet (POST /v1/calls/{id}/events before the call's media stream attached, or
 * not taken by its worker), in injection order (`seq`). The next stream that attaches takes them (AttachMedia's
 * pending_events) and they are deleted in the same transaction.
 */
export class CreateCallPendingEvents1764900000430 implements MigrationInterface {
  name = 'CreateCallPendingEvents1764900000430';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE IF NOT EXISTS call_pending_events (
      seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      call_id text NOT NULL REFERENCES calls (id) ON DELETE CASCADE,
      event_id text NOT NULL,
      name text NOT NULL,
      payload json NOT NULL,
      created_at timestamptz(3) NOT NULL
    )`);
    await q.query(`CREATE INDEX IF NOT EXISTS call_pending_events_call ON call_pending_events (call_id, seq)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS call_pending_events`);
  }
}

/**
 * Which knowledge-base documents grounded an agent's answer (GroundingSource in @parley/contracts: document_id,
 * knowledge_base_id, title, score), best first; [] on turns without, and on the turns stored before.
 */
export class AddTurnGrounding1765000000440 implements MigrationInterface {
  name = 'AddTurnGrounding1765000000440';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE call_turns ADD COLUMN IF NOT EXISTS grounding jsonb NOT NULL DEFAULT '[]'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE call_turns DROP COLUMN IF EXISTS grounding`);
  }
}

/**
 * A call placed by a workflow run (CreateCallRequest.workflow_run_id, workflow_recipient_id): the run and recipient
 * it belongs to; null on other calls. A run's calls are listed newest first (GET /v1/calls?workflow_run_id=).
 */
export class AddCallWorkflow1765100000450 implements MigrationInterface {
  name = 'AddCallWorkflow1765100000450';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE calls ADD COLUMN IF NOT EXISTS workflow_run_id text, ADD COLUMN IF NOT EXISTS workflow_recipient_id text`);
    await q.query(`CREATE INDEX IF NOT EXISTS calls_workflow_run ON calls (account_id, workflow_run_id, created_at DESC) WHERE workflow_run_id IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS calls_workflow_run`);
    await q.query(`ALTER TABLE calls DROP COLUMN IF EXISTS workflow_recipient_id, DROP COLUMN IF EXISTS workflow_run_id`);
  }
}

/**
 * Satisfaction ratings of calls (POST /v1/analytics/csat, the agent's keypad survey): at most one per call and source
 * (`api`, `web`, `keypad`); a repeat is answered with the stored one. `score` is within 1..`scale` (5 or 10).
 */
export class CreateCallRatings1765200000460 implements MigrationInterface {
  name = 'CreateCallRatings1765200000460';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE IF NOT EXISTS call_ratings (
      id text PRIMARY KEY,
      account_id text NOT NULL,
      call_id text NOT NULL REFERENCES calls (id) ON DELETE CASCADE,
      source text NOT NULL CHECK (source IN ('api', 'web', 'keypad')),
      scale int NOT NULL CHECK (scale IN (5, 10)),
      score int NOT NULL CHECK (score BETWEEN 1 AND scale),
      comment text,
      created_at timestamptz(3) NOT NULL DEFAULT now(),
      UNIQUE (call_id, source)
    )`);
    await q.query(`CREATE INDEX IF NOT EXISTS call_ratings_account ON call_ratings (account_id, created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS call_ratings`);
  }
}

/**
 * Analytics (GET /v1/analytics/overview, /timeseries). `calls_analytics`: the account's calls by creation time with
 * every column the measures read, so a period's calls are counted from the index alone (an index-only scan). A
 * rating carries its call's creation time, agent and direction (filled when it is stored; existing ones from their
 * calls here), so a period's ratings are read from `call_ratings_analytics` without a join to the calls.
 */
export class AddCallAnalytics1765300000470 implements MigrationInterface {
  name = 'AddCallAnalytics1765300000470';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE INDEX IF NOT EXISTS calls_analytics ON calls (account_id, created_at) INCLUDE (agent_id, direction, answered_at, ended_at, end_reason, transferred_to)`,
    );
    await q.query(
      `ALTER TABLE call_ratings ADD COLUMN IF NOT EXISTS call_created_at timestamptz(3), ADD COLUMN IF NOT EXISTS agent_id text, ADD COLUMN IF NOT EXISTS direction text`,
    );
    await q.query(`
      UPDATE call_ratings r SET call_created_at = c.created_at, agent_id = c.agent_id, direction = c.direction
        FROM calls c WHERE c.id = r.call_id AND r.call_created_at IS NULL`);
    await q.query(`CREATE INDEX IF NOT EXISTS call_ratings_analytics ON call_ratings (account_id, call_created_at) INCLUDE (agent_id, direction, scale, score)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS call_ratings_analytics`);
    await q.query(`ALTER TABLE call_ratings DROP COLUMN IF EXISTS call_created_at, DROP COLUMN IF EXISTS agent_id, DROP COLUMN IF EXISTS direction`);
    await q.query(`DROP INDEX IF EXISTS calls_analytics`);
  }
}

/**
 * Projects (docs/projects.md): a call counts against its agent's project (null on calls stored before projects: the
 * account's default project), and the ceilings of each project the gateway puts here (it owns projects), with the
 * limits already reported reached (`project.limit_reached` is sent once until the project is back under it).
 */
export class AddCallProjects1765500000490 implements MigrationInterface {
  name = 'AddCallProjects1765500000490';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE calls ADD COLUMN IF NOT EXISTS project_id text`);
    await q.query(`CREATE INDEX IF NOT EXISTS calls_project ON calls (account_id, project_id, created_at DESC, id DESC)`);
    await q.query(`CREATE TABLE IF NOT EXISTS project_ceilings (
      project_id text PRIMARY KEY,
      account_id text NOT NULL,
      max_live_calls int NOT NULL DEFAULT 0 CHECK (max_live_calls >= 0),
      reached text[] NOT NULL DEFAULT '{}',
      updated_at timestamptz(3) NOT NULL DEFAULT now()
    )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS project_ceilings`);
    await q.query(`DROP INDEX IF EXISTS calls_project`);
    await q.query(`ALTER TABLE calls DROP COLUMN IF EXISTS project_id`);
  }
}

/**
 * Usage and cost (issue 22, part 2) and the analytics of latency and barge-ins. Every column is added with a
 * constant default or none, so no table is rewritten. A call keeps its usage totals and costs (the sums of its
 * `call_usage` lines, plus the carrier's cost once it ended), its agent turns and barge-ins, and the response
 * latencies of its turns (also kept on each turn), so the analytics read them from the calls' index alone:
 * `calls_analytics` is rebuilt with them in its INCLUDE list (built before the old one is dropped).
 */
export class AddCallUsage1765600000500 implements MigrationInterface {
  name = 'AddCallUsage1765600000500';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE calls
        ADD COLUMN IF NOT EXISTS usage_stt_ms bigint NOT NULL DEFAULT 0,
        ADD COLUMN IF NOT EXISTS usage_llm_input_tokens bigint NOT NULL DEFAULT 0,
        ADD COLUMN IF NOT EXISTS usage_llm_output_tokens bigint NOT NULL DEFAULT 0,
        ADD COLUMN IF NOT EXISTS usage_tts_characters bigint NOT NULL DEFAULT 0,
        ADD COLUMN IF NOT EXISTS cost_carrier numeric NOT NULL DEFAULT 0,
        ADD COLUMN IF NOT EXISTS cost_stt numeric NOT NULL DEFAULT 0,
        ADD COLUMN IF NOT EXISTS cost_llm numeric NOT NULL DEFAULT 0,
        ADD COLUMN IF NOT EXISTS cost_tts numeric NOT NULL DEFAULT 0,
        ADD COLUMN IF NOT EXISTS cost numeric NOT NULL DEFAULT 0,
        ADD COLUMN IF NOT EXISTS cost_currency text,
        ADD COLUMN IF NOT EXISTS agent_turns int NOT NULL DEFAULT 0,
        ADD COLUMN IF NOT EXISTS barge_ins int NOT NULL DEFAULT 0,
        ADD COLUMN IF NOT EXISTS response_latencies_ms int[]`);
    await q.query(`ALTER TABLE call_turns ADD COLUMN IF NOT EXISTS response_latency_ms int`);
    await q.query(`
      CREATE TABLE IF NOT EXISTS call_usage (
        call_id text NOT NULL REFERENCES calls(id) ON DELETE CASCADE,
        stream_id text NOT NULL,
        kind text NOT NULL,
        provider text NOT NULL,
        model text NOT NULL,
        account_id text NOT NULL,
        quantity bigint NOT NULL,
        cost numeric NOT NULL,
        updated_at timestamptz(3) NOT NULL DEFAULT now(),
        PRIMARY KEY (call_id, stream_id, kind, provider, model)
      )`);
    await q.query(
      `CREATE INDEX IF NOT EXISTS calls_analytics_usage ON calls (account_id, created_at) INCLUDE (agent_id, direction, project_id, answered_at, ended_at, end_reason, transferred_to, carrier, cost, agent_turns, barge_ins, response_latencies_ms)`,
    );
    await q.query(`DROP INDEX IF EXISTS calls_analytics`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE INDEX IF NOT EXISTS calls_analytics ON calls (account_id, created_at) INCLUDE (agent_id, direction, answered_at, ended_at, end_reason, transferred_to)`,
    );
    await q.query(`DROP INDEX IF EXISTS calls_analytics_usage`);
    await q.query(`DROP TABLE IF EXISTS call_usage`);
    await q.query(`ALTER TABLE call_turns DROP COLUMN IF EXISTS response_latency_ms`);
    await q.query(`
      ALTER TABLE calls
        DROP COLUMN IF EXISTS usage_stt_ms, DROP COLUMN IF EXISTS usage_llm_input_tokens, DROP COLUMN IF EXISTS usage_llm_output_tokens,
        DROP COLUMN IF EXISTS usage_tts_characters, DROP COLUMN IF EXISTS cost_carrier, DROP COLUMN IF EXISTS cost_stt,
        DROP COLUMN IF EXISTS cost_llm, DROP COLUMN IF EXISTS cost_tts, DROP COLUMN IF EXISTS cost, DROP COLUMN IF EXISTS cost_currency, DROP COLUMN IF EXISTS agent_turns,
        DROP COLUMN IF EXISTS barge_ins, DROP COLUMN IF EXISTS response_latencies_ms`);
  }
}

/**
 * A project's spending ceiling (docs/projects.md): `spend_amount` in `spend_currency` per `spend_period` (day or
 * month, UTC); `spend_reported_from`: the start of the period whose project.limit_reached was sent.
 */
export class AddProjectSpendCeiling1765500000500 implements MigrationInterface {
  name = 'AddProjectSpendCeiling1765500000500';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE project_ceilings
        ADD COLUMN IF NOT EXISTS spend_amount numeric CHECK (spend_amount > 0),
        ADD COLUMN IF NOT EXISTS spend_currency text,
        ADD COLUMN IF NOT EXISTS spend_period text CHECK (spend_period IN ('day', 'month')),
        ADD COLUMN IF NOT EXISTS spend_reported_from timestamptz(3)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE project_ceilings DROP COLUMN IF EXISTS spend_amount, DROP COLUMN IF EXISTS spend_currency, DROP COLUMN IF EXISTS spend_period, DROP COLUMN IF EXISTS spend_reported_from`);
  }
}

/**
 * Response latencies in a table of their own, one row per measured agent turn with its call's creation time, agent,
 * direction and project (written with the turn), so the overview's percentiles read a narrow index-only range
 * (`call_turn_latencies_analytics`) instead of unnesting an array per call: three times faster over a month of a
 * million calls. The calls' array goes (its values are moved here first), and `calls_analytics_usage` is rebuilt
 * without it.
 */
export class CreateCallTurnLatencies1765700000510 implements MigrationInterface {
  name = 'CreateCallTurnLatencies1765700000510';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE IF NOT EXISTS call_turn_latencies (
        call_id text NOT NULL REFERENCES calls(id) ON DELETE CASCADE,
        seq int NOT NULL,
        account_id text NOT NULL,
        call_created_at timestamptz(3) NOT NULL,
        agent_id text NOT NULL,
        direction text NOT NULL,
        project_id text,
        latency_ms int NOT NULL,
        PRIMARY KEY (call_id, seq)
      )`);
    await q.query(`
      INSERT INTO call_turn_latencies (call_id, seq, account_id, call_created_at, agent_id, direction, project_id, latency_ms)
      SELECT c.id, l.n, c.account_id, c.created_at, c.agent_id, c.direction, c.project_id, l.v
        FROM calls c CROSS JOIN LATERAL unnest(c.response_latencies_ms) WITH ORDINALITY AS l(v, n)
       WHERE c.response_latencies_ms IS NOT NULL
      ON CONFLICT DO NOTHING`);
    await q.query(
      `CREATE INDEX IF NOT EXISTS call_turn_latencies_analytics ON call_turn_latencies (account_id, call_created_at) INCLUDE (agent_id, direction, project_id, latency_ms)`,
    );
    await q.query(`DROP INDEX IF EXISTS calls_analytics_usage`);
    await q.query(`ALTER TABLE calls DROP COLUMN IF EXISTS response_latencies_ms`);
    await q.query(
      `CREATE INDEX IF NOT EXISTS calls_analytics_usage ON calls (account_id, created_at) INCLUDE (agent_id, direction, project_id, answered_at, ended_at, end_reason, transferred_to, carrier, cost, agent_turns, barge_ins)`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS calls_analytics_usage`);
    await q.query(`ALTER TABLE calls ADD COLUMN IF NOT EXISTS response_latencies_ms int[]`);
    await q.query(`
      UPDATE calls c SET response_latencies_ms = l.values
        FROM (SELECT call_id, array_agg(latency_ms ORDER BY seq) AS values FROM call_turn_latencies GROUP BY call_id) l
       WHERE c.id = l.call_id`);
    await q.query(
      `CREATE INDEX IF NOT EXISTS calls_analytics_usage ON calls (account_id, created_at) INCLUDE (agent_id, direction, project_id, answered_at, ended_at, end_reason, transferred_to, carrier, cost, agent_turns, barge_ins, response_latencies_ms)`,
    );
    await q.query(`DROP TABLE IF EXISTS call_turn_latencies`);
  }
}

/**
 * Post-call success (the agent's `post_call.success`): the criteria in force when the call was created, and the
 * verdict (`successful`): null while undecided or when the agent defines none.
 */
export class AddCallSuccess1765800000630 implements MigrationInterface {
  name = 'AddCallSuccess1765800000630';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE calls ADD COLUMN IF NOT EXISTS success_criteria jsonb, ADD COLUMN IF NOT EXISTS successful boolean`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE calls DROP COLUMN IF EXISTS successful, DROP COLUMN IF EXISTS success_criteria`);
  }
}

/**
 * The media stream that placed a call's transfer: the carrier stops it as it moves the call, and its stop must not
 * end the call (the transfer may still ring, or the caller may be back with the agent on a newer stream).
 */
export class AddCallTransferStream1766000000720 implements MigrationInterface {
  name = 'AddCallTransferStream1766000000720';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE calls ADD COLUMN IF NOT EXISTS transfer_stream_id text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE calls DROP COLUMN IF EXISTS transfer_stream_id`);
  }
}

export const CALLS_MIGRATIONS = [
  CreateOutbox1763700000000,
  CreateCalls1763700000301,
  AddCallMedia1763800000302,
  CreateDoNotCall1763800000303,
  AddCallAnalysis1763900000304,
  AddCallAnalysisSchedule1764000000305,
  AddAnsweredBy1764000000306,
  AddCarrierCheckedAt1764000000310,
  AddTurnStreamSeq1764000000320,
  AddCallIdempotencyKey1764000000330,
  CreateCallToolCalls1764100000350,
  BusDeadLetters1764200000000,
  AddCallMediaWorker1764300000360,
  CreateRealtimeTokens1764400000370,
  AddCallSeats1764500000380,
  AddCallClaims1764600000390,
  AddTurnSpeaker1764700000410,
  CreateCallFlowTransitions1764800000420,
  CreateCallPendingEvents1764900000430,
  AddTurnGrounding1765000000440,
  AddCallWorkflow1765100000450,
  CreateCallRatings1765200000460,
  AddCallAnalytics1765300000470,
  AddCallProjects1765500000490,
  AddProjectSpendCeiling1765500000500,
  AddCallUsage1765600000500,
  CreateCallTurnLatencies1765700000510,
  AddCallSuccess1765800000630,
  AddCallAnalyticsAggregates1765900000600,
  AddCallAnalyticsSuccess1765900000610,
  CreateProjectSpend1765900000700,
  ProjectSpendStatementTriggers1765900000710,
  AddCallTransferStream1766000000720,
];
