/**
 * The catalogue of every NATS subject. A subject is declared once here with its payload type and the JetStream
 * stream that stores it; publishers and consumers refer to these constants, never to string literals.
 */
export interface StreamDef {
  readonly name: string;
  readonly subjects: readonly string[];
  readonly description: string;
}

export const STREAMS = {
  domain: {
    name: 'PARLEY_DOMAIN',
    subjects: ['parley.domain.>'],
    description: 'Internal domain events between services (agent changes, call lifecycle)',
  },
  webhookEvents: {
    name: 'PARLEY_WEBHOOK_EVENTS',
    subjects: ['parley.events.>'],
    description: 'Customer-facing events awaiting signed webhook delivery',
  },
} as const satisfies Record<string, StreamDef>;

export interface Subject<P> {
  readonly name: string;
  readonly stream: StreamDef;
  /** Phantom field carrying the payload type; never set at run time. */
  readonly payload?: P;
}

export type PayloadOf<S> = S extends Subject<infer P> ? P : never;

function subject<P>(name: string, stream: StreamDef): Subject<P> {
  return { name, stream };
}

export interface AgentChanged {
  account_id: string;
  agent_id: string;
  /** RFC 3339 time of the change. */
  at: string;
}

export const SUBJECTS = {
  agentCreated: subject<AgentChanged>('parley.domain.agents.agent.created', STREAMS.domain),
  agentUpdated: subject<AgentChanged>('parley.domain.agents.agent.updated', STREAMS.domain),
  agentDeleted: subject<AgentChanged>('parley.domain.agents.agent.deleted', STREAMS.domain),
} as const;

/** Message header carrying the public request id across every NATS hop. */
export const REQUEST_ID_HEADER = 'X-Request-Id';
