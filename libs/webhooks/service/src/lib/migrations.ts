import { CreateOutbox1763700000000 } from '@parley/messaging';
import { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateWebhooks1763700000201 implements MigrationInterface {
  name = 'CreateWebhooks1763700000201';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE IF NOT EXISTS endpoints (
        id text PRIMARY KEY,
        account_id text NOT NULL,
        url text NOT NULL,
        events jsonb NOT NULL,
        description text NOT NULL DEFAULT '',
        enabled boolean NOT NULL DEFAULT true,
        metadata jsonb NOT NULL DEFAULT '{}',
        disabled_reason text,
        consecutive_failures int NOT NULL DEFAULT 0,
        created_at timestamptz(3) NOT NULL,
        updated_at timestamptz(3) NOT NULL,
        UNIQUE (account_id, url)
      )`);
    await q.query(`CREATE INDEX IF NOT EXISTS endpoints_listing ON endpoints (account_id, created_at DESC, id DESC)`);
    // Secrets are sealed at rest; several are active during a rotation's overlap.
    await q.query(`
      CREATE TABLE IF NOT EXISTS endpoint_secrets (
        endpoint_id text NOT NULL REFERENCES endpoints(id) ON DELETE CASCADE,
        sealed text NOT NULL,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        expires_at timestamptz(3)
      )`);
    await q.query(`CREATE INDEX IF NOT EXISTS endpoint_secrets_endpoint ON endpoint_secrets (endpoint_id)`);
    // One row per (event, endpoint): the durable delivery schedule.
    await q.query(`
      CREATE TABLE IF NOT EXISTS deliveries (
        id text PRIMARY KEY,
        event_id text NOT NULL,
        event_type text NOT NULL,
        endpoint_id text NOT NULL REFERENCES endpoints(id) ON DELETE CASCADE,
        body text NOT NULL,
        attempts int NOT NULL DEFAULT 0,
        state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'succeeded', 'failed')),
        next_attempt_at timestamptz(3) NOT NULL,
        locked_until timestamptz(3),
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        UNIQUE (event_id, endpoint_id)
      )`);
    await q.query(`CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries (next_attempt_at) WHERE state = 'pending'`);
    await q.query(`
      CREATE TABLE IF NOT EXISTS delivery_attempts (
        id text PRIMARY KEY,
        delivery_id text NOT NULL REFERENCES deliveries(id) ON DELETE CASCADE,
        endpoint_id text NOT NULL,
        event_id text NOT NULL,
        event_type text NOT NULL,
        attempt int NOT NULL,
        status_code int,
        error text,
        duration_ms int NOT NULL,
        succeeded boolean NOT NULL,
        next_attempt_at timestamptz(3),
        created_at timestamptz(3) NOT NULL
      )`);
    await q.query(`CREATE INDEX IF NOT EXISTS delivery_attempts_listing ON delivery_attempts (endpoint_id, created_at DESC, id DESC)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS delivery_attempts, deliveries, endpoint_secrets, endpoints`);
  }
}

/**
 * An agent's `webhook_url` gets an endpoint of its own (so it has a secret, retries and history), owned by the
 * agent: it receives that agent's events only, and tenant-wide fan-out skips it.
 */
export class AgentOwnedEndpoints1763700000202 implements MigrationInterface {
  name = 'AgentOwnedEndpoints1763700000202';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE endpoints ADD COLUMN IF NOT EXISTS owner_agent_id text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE endpoints DROP COLUMN IF EXISTS owner_agent_id`);
  }
}

/** The claim query counts each endpoint's leased deliveries; without this index that count scans the backlog. */
export class PendingDeliveriesByEndpoint1763700000203 implements MigrationInterface {
  name = 'PendingDeliveriesByEndpoint1763700000203';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX IF NOT EXISTS deliveries_pending_endpoint ON deliveries (endpoint_id, locked_until) WHERE state = 'pending'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS deliveries_pending_endpoint`);
  }
}

/** The claim takes each endpoint's oldest due deliveries; this index serves it without sorting the backlog. */
export class DueDeliveriesByEndpoint1763700000204 implements MigrationInterface {
  name = 'DueDeliveriesByEndpoint1763700000204';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX IF NOT EXISTS deliveries_pending_endpoint_due ON deliveries (endpoint_id, next_attempt_at) WHERE state = 'pending'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS deliveries_pending_endpoint_due`);
  }
}

/** Several endpoints may share a URL (different event filters): the one-per-URL constraint goes, its lookup index stays. */
export class EndpointsShareUrls1763700000205 implements MigrationInterface {
  name = 'EndpointsShareUrls1763700000205';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE endpoints DROP CONSTRAINT IF EXISTS endpoints_account_id_url_key`);
    await q.query(`CREATE INDEX IF NOT EXISTS endpoints_account_url ON endpoints (account_id, url)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS endpoints_account_url`);
    await q.query(`ALTER TABLE endpoints ADD CONSTRAINT endpoints_account_id_url_key UNIQUE (account_id, url)`);
  }
}

/** Test deliveries join the attempt history, marked as tests; they belong to no scheduled delivery. */
export class TestDeliveriesInHistory1763700000206 implements MigrationInterface {
  name = 'TestDeliveriesInHistory1763700000206';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE delivery_attempts ADD COLUMN IF NOT EXISTS test boolean NOT NULL DEFAULT false`);
    await q.query(`ALTER TABLE delivery_attempts ALTER COLUMN delivery_id DROP NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM delivery_attempts WHERE test`);
    await q.query(`ALTER TABLE delivery_attempts ALTER COLUMN delivery_id SET NOT NULL`);
    await q.query(`ALTER TABLE delivery_attempts DROP COLUMN IF EXISTS test`);
  }
}

/**
 * The delivery promises (docs/webhooks.md): endpoints are deleted softly so their history stays readable and
 * in-flight work finds its rows; a delivery can end cancelled (pending when its endpoint was disabled or deleted)
 * or skipped (its event occurred while the endpoint was disabled), both shown in the history; an attempt abandoned
 * because its endpoint was disabled mid-flight is marked aborted; events the dispatcher could not accept after
 * their bounded redeliveries are parked in dead_letters until an operator replays them.
 */
export class WebhookPromises1763700000207 implements MigrationInterface {
  name = 'WebhookPromises1763700000207';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE endpoints ADD COLUMN IF NOT EXISTS deleted_at timestamptz(3)`);
    await q.query(`ALTER TABLE deliveries DROP CONSTRAINT IF EXISTS deliveries_state_check`);
    await q.query(`ALTER TABLE deliveries ADD CONSTRAINT deliveries_state_check CHECK (state IN ('pending', 'succeeded', 'failed', 'cancelled', 'skipped'))`);
    await q.query(`ALTER TABLE deliveries ADD COLUMN IF NOT EXISTS settled_at timestamptz(3), ADD COLUMN IF NOT EXISTS settle_reason text`);
    await q.query(`CREATE INDEX IF NOT EXISTS deliveries_settled_listing ON deliveries (endpoint_id, settled_at DESC, id DESC) WHERE state IN ('cancelled', 'skipped')`);
    await q.query(`ALTER TABLE delivery_attempts ADD COLUMN IF NOT EXISTS aborted boolean NOT NULL DEFAULT false`);
    // One rule from now on: a disabled endpoint has no pending deliveries, so a backlog of any age cannot resume.
    await q.query(`
      UPDATE deliveries d SET state = 'cancelled', locked_until = NULL, settled_at = now(), settle_reason = 'the endpoint was disabled'
        FROM endpoints e WHERE e.id = d.endpoint_id AND NOT e.enabled AND d.state = 'pending'`);
    // The payload is kept as text: what made an event poison (a NUL, say) may be exactly what jsonb refuses.
    await q.query(`
      CREATE TABLE IF NOT EXISTS dead_letters (
        id text PRIMARY KEY,
        message_id text NOT NULL UNIQUE,
        subject text NOT NULL,
        payload text NOT NULL,
        reason text NOT NULL,
        deliveries int NOT NULL,
        parked_at timestamptz(3) NOT NULL DEFAULT now(),
        replay_requested_at timestamptz(3),
        replayed_at timestamptz(3)
      )`);
    await q.query(`CREATE INDEX IF NOT EXISTS dead_letters_replay ON dead_letters (replay_requested_at) WHERE replay_requested_at IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS dead_letters`);
    await q.query(`ALTER TABLE delivery_attempts DROP COLUMN IF EXISTS aborted`);
    await q.query(`DROP INDEX IF EXISTS deliveries_settled_listing`);
    await q.query(`DELETE FROM deliveries WHERE state IN ('cancelled', 'skipped')`);
    await q.query(`ALTER TABLE deliveries DROP COLUMN IF EXISTS settled_at, DROP COLUMN IF EXISTS settle_reason`);
    await q.query(`ALTER TABLE deliveries DROP CONSTRAINT IF EXISTS deliveries_state_check`);
    await q.query(`ALTER TABLE deliveries ADD CONSTRAINT deliveries_state_check CHECK (state IN ('pending', 'succeeded', 'failed'))`);
    await q.query(`DELETE FROM endpoints WHERE deleted_at IS NOT NULL`);
    await q.query(`ALTER TABLE endpoints DROP COLUMN IF EXISTS deleted_at`);
  }
}

/**
 * The dispatcher's dead_letters table takes the shape every service's has (BusDeadLetters1764200000000 in
 * @parley/messaging): parked messages of any of its consumers, one row per (consumer, message), ids by default.
 * Rows parked so far came from the webhook events consumer (BusServer's durable name for `parley.events.>`).
 */
export class SharedDeadLetters1764200000208 implements MigrationInterface {
  name = 'SharedDeadLetters1764200000208';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE dead_letters ADD COLUMN IF NOT EXISTS consumer text NOT NULL DEFAULT 'webhook-dispatcher_parley_events__'`);
    await q.query(`ALTER TABLE dead_letters ALTER COLUMN consumer DROP DEFAULT`);
    await q.query(`ALTER TABLE dead_letters ADD COLUMN IF NOT EXISTS headers jsonb NOT NULL DEFAULT '{}'`);
    await q.query(`ALTER TABLE dead_letters ALTER COLUMN id SET DEFAULT 'wdl_' || replace(gen_random_uuid()::text, '-', '')`);
    await q.query(`ALTER TABLE dead_letters DROP CONSTRAINT IF EXISTS dead_letters_message_id_key`);
    await q.query(`ALTER TABLE dead_letters ADD CONSTRAINT dead_letters_consumer_message_id_key UNIQUE (consumer, message_id)`);
    await q.query(`DROP INDEX IF EXISTS dead_letters_replay`);
    await q.query(`CREATE INDEX dead_letters_replay ON dead_letters (consumer, replay_requested_at) WHERE replay_requested_at IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS dead_letters_replay`);
    await q.query(`CREATE INDEX dead_letters_replay ON dead_letters (replay_requested_at) WHERE replay_requested_at IS NOT NULL`);
    await q.query(`ALTER TABLE dead_letters DROP CONSTRAINT IF EXISTS dead_letters_consumer_message_id_key`);
    await q.query(`ALTER TABLE dead_letters ADD CONSTRAINT dead_letters_message_id_key UNIQUE (message_id)`);
    await q.query(`ALTER TABLE dead_letters ALTER COLUMN id DROP DEFAULT`);
    await q.query(`ALTER TABLE dead_letters DROP COLUMN IF EXISTS headers`);
    await q.query(`ALTER TABLE dead_letters DROP COLUMN IF EXISTS consumer`);
  }
}

/**
 * Projects (docs/projects.md): an endpoint belongs to one (null: the account's default project, as every endpoint
 * stored before projects); counted per project for max_webhook_endpoints.
 */
export class AddEndpointProjects1765500000209 implements MigrationInterface {
  name = 'AddEndpointProjects1765500000209';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE endpoints ADD COLUMN IF NOT EXISTS project_id text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE endpoints DROP COLUMN IF EXISTS project_id`);
  }
}

/**
 * The dispatcher's own events (docs/projects.md: `project.limit_reached` for max_webhook_endpoints) go through an
 * outbox, as every other service's: the outbox table (CreateOutbox1763700000000's shape plus BusDeadLetters's
 * `poison_strikes`; its dead_letters table already has the shared shape), and the mark of a project whose ceiling was
 * reported, until an endpoint is created under it again.
 */
export class AddOutboxAndLimitReports1765800000210 implements MigrationInterface {
  name = 'AddOutboxAndLimitReports1765800000210';

  async up(q: QueryRunner): Promise<void> {
    await new CreateOutbox1763700000000().up(q);
    await q.query(`ALTER TABLE outbox ADD COLUMN IF NOT EXISTS poison_strikes int NOT NULL DEFAULT 0`);
    await q.query(`CREATE TABLE IF NOT EXISTS project_limits_reported (project_id text PRIMARY KEY, account_id text NOT NULL, reported_at timestamptz(3) NOT NULL DEFAULT now())`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS project_limits_reported`);
    await q.query(`DROP TABLE IF EXISTS outbox`);
  }
}

export const WEBHOOKS_MIGRATIONS = [
  CreateWebhooks1763700000201,
  AgentOwnedEndpoints1763700000202,
  PendingDeliveriesByEndpoint1763700000203,
  DueDeliveriesByEndpoint1763700000204,
  EndpointsShareUrls1763700000205,
  TestDeliveriesInHistory1763700000206,
  WebhookPromises1763700000207,
  SharedDeadLetters1764200000208,
  AddEndpointProjects1765500000209,
  AddOutboxAndLimitReports1765800000210,
];
