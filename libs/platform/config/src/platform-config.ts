import { isIP } from 'node:net';
import { Transform } from 'class-transformer';
import {
  IsBoolean,
  IsEmpty,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  Matches,
  Max,
  Min,
  registerDecorator,
  ValidateIf,
  ValidationArguments,
} from 'class-validator';
import { parseBootstrapKeys } from './bootstrap-keys';
import { TracingConfig } from './tracing-config';

const HOST_PORT = /^[A-Za-z0-9.-]+:\d{1,5}$/;

/** How often a media worker tells the calls service that each of its streams is alive (last_media_at). */
export const MEDIA_HEARTBEAT_SECONDS = 10;

function IsBootstrapKeys() {
  return (target: object, propertyName: string) =>
    registerDecorator({
      name: 'isBootstrapKeys',
      target: target.constructor,
      propertyName,
      validator: {
        validate: (value: unknown) => typeof value === 'string' && parseBootstrapKeys(value).problems.length === 0,
        defaultMessage: (args: ValidationArguments) =>
          parseBootstrapKeys(String(args.value)).problems.join('; ') || 'must be a string',
      },
    });
}

/**
 * Problems with an EGRESS_ALLOWLIST value: the rules of parseEgressAllowlist in @parley/egress, repeated here
 * because config imports no other workspace library (host names, IP addresses and CIDR ranges, comma separated).
 */
function egressAllowlistProblems(value: string): string[] {
  const label = /^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$/;
  const address = (text: string) => {
    const bracketed = text.startsWith('[') && text.endsWith(']');
    const family = isIP(bracketed ? text.slice(1, -1) : text);
    return text.includes('%') || (bracketed && family !== 6) ? 0 : family;
  };
  const problem = (raw: string): string | undefined => {
    if (raw.includes('://')) return 'is a URL; give only the host';
    if (raw.includes('/')) {
      const slash = raw.lastIndexOf('/');
      const family = address(raw.slice(0, slash));
      const bits = raw.slice(slash + 1);
      const ok = family !== 0 && /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
      return ok ? undefined : 'is not a valid CIDR range (address/prefix length)';
    }
    if (address(raw)) return undefined;
    if (raw.includes('*')) return 'has a wildcard; list each host';
    if (raw.includes('%') && isIP(raw.replace(/^\[|\]$/g, ''))) return 'has an IPv6 zone id, which is not supported';
    if (raw.includes(':')) return 'has a port or scheme; give only the host';
    const host = raw.toLowerCase().replace(/\.+$/, '');
    const labels = host.split('.');
    if (host.length > 253 || !labels.every((l) => label.test(l))) return 'is not a host name, IP address or CIDR range';
    if (/^(0x[0-9a-f]*|[0-9]+)$/.test(labels[labels.length - 1])) {
      return 'is a numeric address spelling; write IPv4 addresses as four decimal numbers (127.0.0.1)';
    }
    return undefined;
  };
  return value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .flatMap((raw, i) => {
      const found = problem(raw);
      return found ? [`entry ${i + 1} ("${raw}") ${found}`] : [];
    });
}

/** Problems with a WEBHOOK_ALLOW_HTTP_HOSTS value: each entry a bare host name or IP address (no scheme, port or range). */
function httpHostsProblems(value: string): string[] {
  const label = /^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$/;
  return value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .flatMap((raw, i) => {
      const host = raw.toLowerCase().replace(/\.+$/, '');
      const ok = isIP(host.replace(/^\[(.*)\]$/, '$1')) !== 0 || (host.length <= 253 && host.split('.').every((l) => label.test(l)));
      return ok ? [] : [`entry ${i + 1} ("${raw}") is not a host name or IP address (give only the host: no scheme, port or range)`];
    });
}

function IsHttpHosts() {
  return (target: object, propertyName: string) =>
    registerDecorator({
      name: 'isHttpHosts',
      target: target.constructor,
      propertyName,
      validator: {
        validate: (value: unknown) => typeof value === 'string' && httpHostsProblems(value).length === 0,
        defaultMessage: (args: ValidationArguments) => httpHostsProblems(String(args.value)).join('; ') || 'must be a string',
      },
    });
}

function IsEgressAllowlist() {
  return (target: object, propertyName: string) =>
    registerDecorator({
      name: 'isEgressAllowlist',
      target: target.constructor,
      propertyName,
      validator: {
        validate: (value: unknown) => typeof value === 'string' && egressAllowlistProblems(value).length === 0,
        defaultMessage: (args: ValidationArguments) =>
          egressAllowlistProblems(String(args.value)).join('; ') || 'must be a string',
      },
    });
}

/**
 * Settings every service reads. Each environment variable appears once here, with its default; README's table
 * lists the same names (a unit test keeps them in step). The OpenTelemetry settings are TracingConfig's.
 */
export class ServiceConfig extends TracingConfig {
  @IsIn(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'])
  LOG_LEVEL: string = 'info';

  /** PostgreSQL connection string; unset runs an embedded PostgreSQL under DATA_DIR. */
  @IsOptional()
  @Matches(/^postgres(ql)?:\/\//, { message: 'DATABASE_URL must be a postgres:// URL' })
  DATABASE_URL?: string;

  @IsString()
  DATA_DIR: string = './.data';

  @IsInt()
  @Min(1024)
  @Max(65535)
  EMBEDDED_PG_PORT: number = 54329;

  /** NATS server(s), comma separated; unset uses the in-process bus (standalone only). */
  @IsOptional()
  @Matches(/^(nats|tls|ws|wss):\/\/[^,\s]+(,(nats|tls|ws|wss):\/\/[^,\s]+)*$/, {
    message: 'NATS_URL must be one or more nats:// URLs separated by commas',
  })
  NATS_URL?: string;

  /** Prefix of every NATS subject, stream and consumer, for deployments sharing one NATS server; empty = none. */
  @Matches(/^([a-z0-9][a-z0-9_-]{0,31})?$/, { message: 'NATS_NAMESPACE must be up to 32 of a-z, 0-9, _ and -' })
  NATS_NAMESPACE: string = '';

  /** Port of the liveness/readiness/metrics server of a non-gateway service; unset = none (standalone). */
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(65535)
  OPS_PORT?: number;

  /** Address a service's gRPC server binds to; unset = all interfaces on the port of its own *_GRPC_URL. */
  @IsOptional()
  @Matches(HOST_PORT, { message: 'GRPC_BIND must be host:port' })
  GRPC_BIND?: string;

  @Matches(HOST_PORT, { message: 'AGENTS_GRPC_URL must be host:port' })
  AGENTS_GRPC_URL: string = '127.0.0.1:50051';

  @Matches(HOST_PORT, { message: 'CALLS_GRPC_URL must be host:port' })
  CALLS_GRPC_URL: string = '127.0.0.1:50052';

  @Matches(HOST_PORT, { message: 'MEDIA_GRPC_URL must be host:port' })
  MEDIA_GRPC_URL: string = '127.0.0.1:50053';

  /**
   * Where the calls service reaches this media worker's own command server (host:port), sent with every stream it
   * attaches: with several workers, MEDIA_GRPC_URL may name them all (a load-balanced address), this names one
   * (e.g. the pod's IP). Unset: MEDIA_GRPC_URL.
   */
  @IsOptional()
  @Matches(HOST_PORT, { message: 'MEDIA_GRPC_ADVERTISE_URL must be host:port' })
  MEDIA_GRPC_ADVERTISE_URL?: string;

  @Matches(HOST_PORT, { message: 'WEBHOOKS_GRPC_URL must be host:port' })
  WEBHOOKS_GRPC_URL: string = '127.0.0.1:50054';

  /** Deadline of every gRPC call between services, in milliseconds. */
  @IsInt()
  @Min(50)
  @Max(120000)
  RPC_TIMEOUT_MS: number = 5000;

  /**
   * Deployment secret (at least 32 characters) keying cursor signatures and, later, sealed credentials. Unset:
   * generated once and kept in DATA_DIR/secret-key, which suits one machine; set it for distributed mode.
   */
  @IsOptional()
  @IsString()
  @Matches(/^.{32,}$/, { message: 'SECRET_KEY must be at least 32 characters' })
  SECRET_KEY?: string;

  /** Speech recognizers this deployment offers (language entries may name only these). */
  @Matches(/^[a-z0-9_-]+(,[a-z0-9_-]+)*$/, { message: 'STT_PROVIDERS must be a comma-separated list of names' })
  STT_PROVIDERS: string = 'deepgram,openai';

  /** Speech synthesizers this deployment offers; `local` is the offline voice. */
  @Matches(/^[a-z0-9_-]+(,[a-z0-9_-]+)*$/, { message: 'TTS_PROVIDERS must be a comma-separated list of names' })
  TTS_PROVIDERS: string = 'local,elevenlabs,openai';

  /**
   * Worker threads of the offline voice (`local`) in a media worker: sentences synthesized at once. Each is ~40x
   * faster than real time on one core and competes with the thread pacing the calls' audio for the CPU.
   */
  @IsInt()
  @Min(1)
  @Max(32)
  LOCAL_TTS_WORKERS: number = 1;

  /**
   * The media worker's voice activity detection: `silero` (a neural VAD, Silero v5 on onnxruntime-node; if its model
   * cannot be loaded the worker logs an error and uses the energy detector) or `energy` (an adaptive-floor energy
   * detector: nearly free, but any sound that rises and falls like speech counts as speech).
   */
  @IsIn(['silero', 'energy'], { message: 'VAD must be silero or energy' })
  VAD: string = 'silero';

  /** Hosts that agent tools may call over plain http (everything else needs https). */
  @IsString()
  INTERNAL_HOSTS: string = '';

  /**
   * Hosts, IP addresses and CIDR ranges exempt from the outbound-request guard (@parley/egress) that webhook
   * deliveries and tool calls pass; for development and tests only (a receiver on 127.0.0.1).
   */
  @IsEgressAllowlist()
  @Transform(({ value }) => (value === undefined ? '' : String(value)))
  EGRESS_ALLOWLIST: string = '';

  /**
   * Development only, empty (off) by default: hosts webhook endpoints may use over plain http (a receiver on
   * 127.0.0.1). Every other endpoint URL must be https, whatever EGRESS_ALLOWLIST says.
   */
  @IsHttpHosts()
  @Transform(({ value }) => (value === undefined ? '' : String(value)))
  WEBHOOK_ALLOW_HTTP_HOSTS: string = '';

  /** Cal.com API the calendar tools (calendar_availability, book_appointment) call; a self-hosted Cal.com or a test double elsewhere. */
  @Matches(/^https?:\/\/[^\s?#]+$/, { message: 'CALENDAR_BASE_URL must be an http(s) URL without query' })
  CALENDAR_BASE_URL: string = 'https://api.cal.com';

  /** JSON file declaring the registered functions agents may call (see README); unset = none. */
  @IsOptional()
  @IsString()
  FUNCTIONS_FILE?: string;

  /**
   * JSON file of the operator's unit prices (carrier per minute, STT per minute, LLM per 1M tokens, TTS per 1M
   * characters; docs/analytics.md, Cost) that calls' costs are computed with; unset = every price 0 (USD).
   */
  @IsOptional()
  @IsString()
  PRICES_FILE?: string;

  /** OpenAI-compatible API (OpenAI, vLLM, Ollama, llama.cpp server) for models. */
  @Matches(/^https?:\/\/\S+$/, { message: 'LLM_BASE_URL must be an http(s) URL' })
  LLM_BASE_URL: string = 'https://api.openai.com/v1';

  @IsOptional()
  @IsString()
  LLM_API_KEY?: string;

  /** Conversation model when an agent names none. */
  @IsString()
  LLM_MODEL: string = 'gpt-4o-mini';

  /** Deepgram (live speech recognition); the `deepgram` recognizer exists only with a key. */
  @IsOptional()
  @IsString()
  DEEPGRAM_API_KEY?: string;

  /** Where Deepgram's live API is reached instead of wss://api.deepgram.com (self-hosted, or a fake in tests). */
  @IsOptional()
  @Matches(/^(wss?|https?):\/\/\S+$/, { message: 'DEEPGRAM_BASE_URL must be a ws(s):// or http(s):// URL' })
  DEEPGRAM_BASE_URL?: string;

  /** ElevenLabs (speech synthesis); the `elevenlabs` synthesizer exists only with a key. */
  @IsOptional()
  @IsString()
  ELEVENLABS_API_KEY?: string;

  @IsOptional()
  @Matches(/^https?:\/\/\S+$/, { message: 'ELEVENLABS_BASE_URL must be an http(s) URL' })
  ELEVENLABS_BASE_URL?: string;

  /** OpenAI-compatible speech API (transcription and speech); unset = LLM_BASE_URL. */
  @IsOptional()
  @Matches(/^https?:\/\/\S+$/, { message: 'OPENAI_SPEECH_BASE_URL must be an http(s) URL' })
  OPENAI_SPEECH_BASE_URL?: string;

  /** Key for OPENAI_SPEECH_BASE_URL; unset = LLM_API_KEY. The `openai` recognizer and voice exist only with one. */
  @IsOptional()
  @IsString()
  OPENAI_SPEECH_API_KEY?: string;

  /** Model of the post-call analysis when an agent does not name one. */
  @IsString()
  POST_CALL_MODEL: string = 'gpt-4o-mini';

  /** Largest document input in bytes (text as UTF-8, a file once decoded from base64, a fetched URL's body); larger → 413. */
  @IsInt()
  @Min(1024)
  @Max(100 * 1024 * 1024)
  KNOWLEDGE_MAX_DOCUMENT_BYTES: number = 10 * 1024 * 1024;

  /** Most characters of text one document may yield once extracted; more fails the document ("too large"). */
  @IsInt()
  @Min(1000)
  @Max(50_000_000)
  KNOWLEDGE_MAX_DOCUMENT_CHARACTERS: number = 2_000_000;

  /** Most chunks one knowledge base may hold; a document that would pass it fails and stores nothing. */
  @IsInt()
  @Min(1)
  @Max(10_000_000)
  KNOWLEDGE_MAX_BASE_CHUNKS: number = 200_000;

  /**
   * A call's knowledge lookup budget per turn when the agent sets none (capabilities.retrieval_timeout_ms): past it
   * the turn answers without grounding.
   */
  @IsInt()
  @Min(50)
  @Max(2000)
  KNOWLEDGE_RETRIEVAL_TIMEOUT_MS: number = 250;

  /** Knowledge bases one account may have; creating one more answers 422. */
  @IsInt()
  @Min(1)
  @Max(100_000)
  KNOWLEDGE_MAX_BASES_PER_ACCOUNT: number = 100;

  /**
   * Embeddings model for knowledge search's semantic rerank (e.g. text-embedding-3-small); empty = off (lexical
   * search only). With one, chunks are embedded at ingestion and each search reranks its lexical candidates.
   */
  @IsString()
  @Transform(({ value }) => (value === undefined ? '' : String(value).trim()))
  EMBEDDINGS_MODEL: string = '';

  /** OpenAI-compatible `/embeddings` API; unset = LLM_BASE_URL. */
  @IsOptional()
  @Matches(/^https?:\/\/\S+$/, { message: 'EMBEDDINGS_BASE_URL must be an http(s) URL' })
  EMBEDDINGS_BASE_URL?: string;

  /** Key for EMBEDDINGS_BASE_URL; unset = LLM_API_KEY. */
  @IsOptional()
  @IsString()
  EMBEDDINGS_API_KEY?: string;

  /** A search's query embedding must arrive within this, else that search is lexical only. */
  @IsInt()
  @Min(20)
  @Max(2000)
  EMBEDDINGS_QUERY_TIMEOUT_MS: number = 120;

  /** Live calls (queued, ringing, in progress) an account may have at once; above it POST /v1/calls answers 402. */
  @IsInt()
  @Min(1)
  MAX_CONCURRENT_CALLS: number = 10;

  /**
   * Of an account's MAX_CONCURRENT_CALLS, lines workflow runs leave free (for inbound calls and calls placed through
   * the API): a campaign never takes the account's last lines.
   */
  @IsInt()
  @Min(0)
  WORKFLOW_RESERVED_CALLS: number = 2;

  /** Recipients one workflow run may hold (all its pages together); more answer 422. */
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  WORKFLOW_MAX_RECIPIENTS_PER_RUN: number = 100_000;

  /** Dispatches (a due recipient checked, a line taken, its call placed) one calls service handles at once. */
  @IsInt()
  @Min(1)
  @Max(256)
  WORKFLOW_DISPATCH_CONCURRENCY: number = 16;

  /**
   * How long a recipient whose success is a post-call extracted field waits for the call's analysis before it
   * counts as failed (`analysis_missing`).
   */
  @IsInt()
  @Min(60)
  @Max(86400)
  WORKFLOW_ANALYSIS_WAIT_SECONDS: number = 900;

  /** Outbound call set-ups (agent read, record, dial) one calls service runs at once; more wait in a queue. */
  @IsInt()
  @Min(1)
  @Max(1000)
  CALL_SETUP_CONCURRENCY: number = 16;

  /** Longest a set-up waits for its turn; one that would wait longer is refused (503, Retry-After) before dialling. */
  @IsInt()
  @Min(0)
  @Max(60000)
  CALL_SETUP_QUEUE_MS: number = 1000;

  /** Media streams one media worker is sized to carry; new calls are refused once answered plus placed calls fill them. */
  @IsInt()
  @Min(1)
  @Max(100000)
  MEDIA_WORKER_CAPACITY: number = 100;

  /** Event-loop utilization (percent, over its last three load reports) above which a media worker takes no new calls. */
  @IsInt()
  @Min(10)
  @Max(100)
  MEDIA_WORKER_MAX_LOAD_PERCENT: number = 85;

  /** How often each media worker reports its load to call admission, in milliseconds. */
  @IsInt()
  @Min(100)
  @Max(60000)
  MEDIA_LOAD_REPORT_MS: number = 1000;

  /**
   * A live call with no progress and no media for this long is failed with reason no_media. At least three media
   * heartbeats, so a healthy quiet call whose heartbeat is late is never taken for a stuck one.
   */
  @IsInt()
  @Min(3 * MEDIA_HEARTBEAT_SECONDS)
  @Max(86400)
  CALL_STUCK_SECONDS: number = 120;

  /**
   * An answered call whose media worker sent no heartbeat (every MEDIA_HEARTBEAT_SECONDS) for this long is failed
   * with reason media_lost (the worker died or lost the stream); at least 15 so one late heartbeat is not a loss.
   */
  @IsInt()
  @Min(15)
  @Max(3600)
  MEDIA_LOST_SECONDS: number = 30;

  /**
   * A live call with a carrier leg whose state has not moved for this long (and that has no live media) is looked
   * up at the carrier's REST API, so an outcome whose status callback was missed is still recorded.
   */
  @IsInt()
  @Min(5)
  @Max(86400)
  CARRIER_RECONCILE_SECONDS: number = 60;

  /** Carrier look-ups per reconciliation pass (one pass every 5 s per calls replica): the bound on their rate. */
  @IsInt()
  @Min(1)
  @Max(100)
  CARRIER_RECONCILE_BATCH: number = 10;

  /**
   * Public base URL of the gateway as carriers and browsers reach it (https in production): carrier status
   * callbacks and voice webhooks, signed recording links.
   */
  @Matches(/^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/, { message: 'PUBLIC_URL must be an http(s) URL without query' })
  PUBLIC_URL: string = 'http://localhost:8080';

  /** Port of the media worker's WebSocket server (carrier audio streams). */
  @IsInt()
  @Min(0)
  @Max(65535)
  MEDIA_PORT: number = 8081;

  /**
   * The scheduling priority (nice) of the media worker's stream thread, which paces every call's audio: below 0 it
   * wakes ahead of the engine, the control plane and the database on shared cores. Needs CAP_SYS_NICE (root, or the
   * capability); without it the thread keeps the process's priority and the worker logs so once. 0: no change.
   */
  @IsInt()
  @Min(-20)
  @Max(19)
  MEDIA_STREAM_NICE: number = -10;

  @IsString()
  MEDIA_HOST: string = '0.0.0.0';

  /** Public base URL (ws:// or wss://) at which carriers reach the media worker's WebSocket server. */
  @Matches(/^wss?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/, { message: 'MEDIA_PUBLIC_URL must be a ws:// or wss:// URL without query' })
  MEDIA_PUBLIC_URL: string = 'ws://localhost:8081';

  /** Lifetime of the per-call token a carrier presents on the media stream (covers ringing). */
  @IsInt()
  @Min(30)
  @Max(3600)
  STREAM_TOKEN_TTL_SECONDS: number = 600;

  /** Twilio account sid (`AC…`); set it and TWILIO_AUTH_TOKEN to place and take phone calls through Twilio. */
  @IsOptional()
  @Matches(/^AC[0-9a-fA-F]{32}$/, { message: 'TWILIO_ACCOUNT_SID must be AC followed by 32 hex digits' })
  TWILIO_ACCOUNT_SID?: string;

  @ValidateIf((c: ServiceConfig) => c.TWILIO_ACCOUNT_SID !== undefined || c.TWILIO_AUTH_TOKEN !== undefined)
  @IsString({ message: 'TWILIO_AUTH_TOKEN is required with TWILIO_ACCOUNT_SID' })
  TWILIO_AUTH_TOKEN?: string;

  /** Where the Twilio REST API is reached instead of https://api.twilio.com (a proxy, or a fake in tests). */
  @IsOptional()
  @Matches(/^https?:\/\/\S+$/, { message: 'TWILIO_API_BASE_URL must be an http(s) URL' })
  TWILIO_API_BASE_URL?: string;

  /** Caller id of outbound calls that name no `from` (an E.164 number the Twilio account owns). */
  @IsOptional()
  @Matches(/^\+[1-9]\d{6,14}$/, { message: 'TWILIO_FROM_NUMBER must be an E.164 number' })
  TWILIO_FROM_NUMBER?: string;

  /**
   * The built-in development carrier and its dev phone page (docs/dev-phone.md): `auto` turns it on in standalone
   * mode when no phone carrier is configured and leaves it off otherwise; `on` / `off` say so explicitly.
   */
  @IsIn(['auto', 'on', 'off'])
  DEV_CARRIER: string = 'auto';

  /** Where the calls service reaches the dev switch (the gateway's base URL); unset = the gateway's own loopback address standalone, PUBLIC_URL distributed. */
  @IsOptional()
  @Matches(/^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/, { message: 'DEV_CARRIER_URL must be an http(s) URL without query' })
  DEV_CARRIER_URL?: string;

  /** Where call recordings are kept: `local` (a directory; a mounted volume when distributed) or `s3`. */
  @IsIn(['local', 's3'])
  RECORDINGS_STORE: string = 'local';

  /** Directory of the `local` store; unset = DATA_DIR/recordings. */
  @IsOptional()
  @IsString()
  RECORDINGS_DIR?: string;

  /** S3-compatible store (AWS S3, MinIO, Ceph, R2…) for `s3`: endpoint (unset = AWS), bucket, region, keys. */
  @IsOptional()
  @Matches(/^https?:\/\/\S+$/, { message: 'S3_ENDPOINT must be an http(s) URL' })
  S3_ENDPOINT?: string;

  @ValidateIf((c: ServiceConfig) => c.RECORDINGS_STORE === 's3')
  @IsString({ message: 'S3_BUCKET is required when RECORDINGS_STORE is s3' })
  S3_BUCKET?: string;

  @IsString()
  S3_REGION: string = 'us-east-1';

  @IsOptional()
  @IsString()
  S3_ACCESS_KEY_ID?: string;

  @IsOptional()
  @IsString()
  S3_SECRET_ACCESS_KEY?: string;

  /** Path-style bucket addressing (MinIO and most self-hosted stores need it). */
  @IsBoolean()
  @Transform(({ value }) => value === true || value === 'true' || value === '1')
  S3_FORCE_PATH_STYLE: boolean = true;

  /** Lifetime of the playable links GET /v1/calls/{id}/recording_url hands out. */
  @IsInt()
  @Min(60)
  @Max(7 * 86400)
  RECORDING_URL_TTL_SECONDS: number = 3600;

  /** On shutdown the media worker takes no new streams and lets live calls finish this long, then ends them. */
  @IsInt()
  @Min(0)
  @Max(3600)
  CALL_DRAIN_SECONDS: number = 30;

  /** How long shutdown waits for in-flight work before closing, in milliseconds. */
  @IsInt()
  @Min(0)
  @Max(600000)
  SHUTDOWN_GRACE_MS: number = 10000;
}

export class GatewayConfig extends ServiceConfig {
  @IsInt()
  @Min(0)
  @Max(65535)
  PORT: number = 8080;

  @IsString()
  HOST: string = '0.0.0.0';

  /** Largest accepted request body, in bytes. */
  @IsInt()
  @Min(1024)
  @Max(64 * 1024 * 1024)
  BODY_LIMIT_BYTES: number = 1024 * 1024;

  /** Requests each API key may make per window. */
  @IsInt()
  @Min(1)
  RATE_LIMIT_REQUESTS: number = 1000;

  @IsInt()
  @Min(1)
  @Max(3600)
  RATE_LIMIT_WINDOW_SECONDS: number = 60;

  /** Where rate-limit counters live: `memory` (exact, one gateway) or `postgres` (shared by replicas). */
  @IsIn(['auto', 'memory', 'postgres'])
  RATE_LIMIT_STORE: string = 'auto';

  /**
   * Origins (scheme://host[:port], lowercase) whose pages may call the gateway's browser-facing routes, comma
   * separated; empty = any origin. API-key routes never allow a cross-origin call.
   */
  @Matches(/^(https?:\/\/([a-z0-9.-]+|\[[0-9a-f:]+\])(:\d{1,5})?(,https?:\/\/([a-z0-9.-]+|\[[0-9a-f:]+\])(:\d{1,5})?)*)?$/, {
    message: 'CORS_ALLOWED_ORIGINS must be comma-separated origins such as https://app.example.com (scheme, lowercase host, optional port; no path)',
  })
  CORS_ALLOWED_ORIGINS: string = '';

  /** `account:role:key` triples created at start-up if absent. */
  @IsBootstrapKeys()
  @Transform(({ value }) => (value === undefined ? '' : String(value)))
  BOOTSTRAP_KEYS: string = '';
}

/**
 * The standalone platform: the gateway's settings, less those only a distributed service reads. Its gateway serves
 * /healthz, /readyz and /metrics (the media worker's merged in) on PORT; an OPS_PORT would be opened by each service
 * the one process hosts, and the second would fail to start.
 */
export class StandaloneConfig extends GatewayConfig {
  @IsEmpty({ message: 'OPS_PORT is for a distributed service; standalone serves /healthz, /readyz and /metrics on PORT (unset OPS_PORT)' })
  override OPS_PORT?: number = undefined;
}
