import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import {
  CONSOLE_SESSION_MAX_SECONDS,
  CONSOLE_TOKEN_MAX_TTL_SECONDS,
  CONSOLE_TOKEN_TTL_SECONDS,
  DEFAULT_SEATS,
  InjectedCallEvent,
  REALTIME_TOKEN_PREFIX,
  REALTIME_TOKEN_TTL_SECONDS,
  RealtimeRefusal,
  RealtimeRole,
  RealtimeTokenClaims,
  SEAT_NAME,
} from '@parley/contracts';
import { resolveSecretKey, ServiceConfig } from '@parley/config';
import { SignedTokens } from '@parley/persistence';
import { AppError } from '@parley/rpc';
import { CONFIG } from '@parley/runtime';
import { CallAdmission } from './call-admission';
import { AgentSettings, CallControl } from './call-control';
import { isLive } from './call-state';
import { awaitsClaim, CallsDomain } from './calls.domain';
import { CallEntity, Seat } from './entities';

/** The carrier name of a web call: the browser on the realtime socket is the call's far end. */
export const WEB_CARRIER = 'web';

export interface NewWebCall {
  agentId: string;
  variables?: Record<string, string>;
  metadata?: Record<string, string>;
  idempotencyKey?: string;
}

export interface NewRendezvous extends NewWebCall {
  /** Exactly two distinct names (SEAT_NAME); absent: DEFAULT_SEATS. */
  seats?: string[];
}

export interface MintedToken {
  token: string;
  expiresAt: Date;
  role: RealtimeRole;
  /** The seat it takes (role `seat`). */
  seat?: string;
}

/** A console token, and the end of the session it belongs to (no refresh reaches past it). */
export interface ConsoleToken {
  token: MintedToken;
  operator: string;
  sessionExpiresAt: Date;
}

/** A redeemed token: the call joined, who joined it, and the seat taken when it was a seat's. */
export interface Joined {
  call: CallEntity;
  role: RealtimeRole;
  seat?: string;
  /** A web call a person answers: the worker rings the browser until the claim. */
  awaitClaim?: boolean;
  /** The caller's stream: events injected that no conversation took yet, in order (handed over once). */
  pending?: InjectedCallEvent[];
}

/** Who a claim records when it names nobody (an API key's claim without `operator`). */
export const API_CLAIMER = 'api';
const OPERATOR_MAX_LENGTH = 80;

/** Agent modes a person can talk to from a browser (`webrtc` agents introduce two browsers: `rendezvous`). */
const WEB_MODES = ['conversation', 'keypad'];

const refused = (refusal: RealtimeRefusal, message: string) =>
  new AppError(refusal === 'call_over' ? 'conflict' : 'unauthenticated', message, undefined, { refusal });

/**
 * Web calls: a browser talks to an agent over the realtime socket, with a short-lived token instead of an API key.
 * Placing one records the call (`queued`, direction `web`, carrier `web`) and mints its token; the browser's
 * connection redeems the token once, within its window (REALTIME_TOKEN_TTL_SECONDS, checked at connect), and
 * answers the call. Tokens are signed with a key of their own derived from SECRET_KEY and carry no secret.
 */
@Injectable()
export class WebCalls {
  private readonly tokens: SignedTokens<RealtimeTokenClaims>;

  constructor(
    private readonly calls: CallsDomain,
    private readonly control: CallControl,
    private readonly admission: CallAdmission,
    @Inject(CONFIG) private readonly config: ServiceConfig,
  ) {
    this.tokens = new SignedTokens(resolveSecretKey(config), 'realtime');
  }

  /**
   * Records a web call and mints the token that joins it. Admission first, as for a phone call: a platform that
   * cannot carry one more call refuses (503) before anything is recorded. A create repeating an Idempotency-Key
   * returns that call with a fresh token while nobody has joined it.
   */
  async place(accountId: string, input: NewWebCall): Promise<{ call: CallEntity; token: MintedToken }> {
    if (input.idempotencyKey) {
      const known = await this.calls.findByIdempotencyKey(accountId, input.idempotencyKey);
      if (known) {
        if (known.direction !== 'web' || known.seats || known.agentId !== input.agentId) throw new AppError('idempotency_conflict', 'This Idempotency-Key was already used with a different request.');
        return { call: known, token: this.mintFor(known) };
      }
    }
    const agent = await this.control.agentSettings(accountId, input.agentId, 'agent_id');
    if (!WEB_MODES.includes(agent.mode)) {
      throw AppError.validation([{ field: 'agent_id', message: `names a ${agent.mode} agent; a browser can talk to conversation and keypad agents` }]);
    }
    // A `simple` agent's web call is answered by a person who claims it, as its inbound phone calls are.
    const call = await this.record(accountId, input, agent, undefined, agent.answersByClaim);
    return { call, token: this.mintFor(call) };
  }

  /**
   * Records a rendezvous: a call between two people in browsers, introduced by a `webrtc` agent, with two named
   * seats that each browser takes with its own token (`seat`). No token is minted here: the customer's server asks
   * for each seat's when it hands that seat to a person. A repeat with the same Idempotency-Key answers the same call.
   */
  async rendezvous(accountId: string, input: NewRendezvous): Promise<CallEntity> {
    const names = input.seats?.length ? input.seats : [...DEFAULT_SEATS];
    if (names.length !== 2 || names[0] === names[1]) throw AppError.validation([{ field: 'seats', message: 'must name exactly two distinct seats' }]);
    const bad = names.findIndex((name) => typeof name !== 'string' || !SEAT_NAME.test(name));
    if (bad >= 0) throw AppError.validation([{ field: `seats[${bad}]`, message: 'must be 1-40 characters of a-z, 0-9, _ and -' }]);
    if (input.idempotencyKey) {
      const known = await this.calls.findByIdempotencyKey(accountId, input.idempotencyKey);
      if (known) {
        if (!known.seats || known.agentId !== input.agentId) throw new AppError('idempotency_conflict', 'This Idempotency-Key was already used with a different request.');
        return known;
      }
    }
    const agent = await this.control.agentSettings(accountId, input.agentId, 'agent_id');
    if (agent.mode !== 'webrtc') throw AppError.validation([{ field: 'agent_id', message: `names a ${agent.mode} agent; a rendezvous needs a webrtc agent` }]);
    return this.record(accountId, input, agent, names.map((name) => ({ name, taken: false })));
  }

  /**
   * A token that takes seat `seat` of rendezvous `id`. A seat is taken once a browser joined with one of its
   * tokens; until then a new token may be minted (the first expired unused, say).
   */
  async seat(accountId: string, id: string, seat: string): Promise<{ call: CallEntity; token: MintedToken }> {
    const call = await this.calls.get(accountId, id);
    if (!call.seats) throw new AppError('conflict', 'The call is not a rendezvous; it has no seats.');
    const named = call.seats.find((s) => s.name === seat);
    if (!named) throw AppError.validation([{ field: 'seat', message: `must be one of ${call.seats.map((s) => s.name).join(', ')}` }]);
    if (!isLive(call.status)) throw new AppError('conflict', `The call is over (${call.endReason ?? call.status}).`);
    if (named.taken) throw new AppError('conflict', `Seat ${seat} is taken: a browser joined with it.`);
    // The free seat of a claimed rendezvous is the claimer's: their claim's token takes it, nobody else's.
    if (call.claimedBy) throw new AppError('conflict', `Seat ${seat} was claimed by ${call.claimedBy}.`);
    return { call, token: this.mintFor(call, seat) };
  }

  /** Admission first, as for a phone call: a platform that cannot carry one more call refuses (503) before it is recorded. */
  private async record(accountId: string, input: NewWebCall, agent: AgentSettings, seats?: Seat[], answeredByClaim = false): Promise<CallEntity> {
    // Answered well within the gateway's deadline, so a refusal still reaches the browser's server.
    const ticket = await this.admission.admit(Date.now() + (this.config.RPC_TIMEOUT_MS * 3) / 4);
    try {
      const call = await this.calls.insert({
        accountId,
        agentId: input.agentId,
        direction: 'web',
        to: '',
        from: '',
        status: 'queued',
        carrier: WEB_CARRIER,
        carrierCallId: null,
        recordingEnabled: agent.recordCalls,
        variables: input.variables ?? {},
        metadata: input.metadata ?? {},
        idempotencyKey: input.idempotencyKey || null,
        seats: seats ?? null,
        // A rendezvous' second end may be a person who claims it from the ringing list.
        claimable: seats !== undefined || answeredByClaim,
        projectId: agent.projectId,
        successCriteria: agent.success,
      });
      ticket.recorded();
      return call;
    } finally {
      ticket.release();
    }
  }

  /**
   * A token to join call `id` as `role`. Today a browser joins a web call nobody has joined yet (its first token
   * expired unused, say); joining a phone call or a call with a browser on it is refused (409).
   */
  async mint(accountId: string, id: string, role: RealtimeRole): Promise<{ call: CallEntity; token: MintedToken }> {
    const call = await this.calls.get(accountId, id);
    if (role !== 'caller') throw AppError.validation([{ field: 'role', message: 'must be caller' }]);
    if (call.seats) throw new AppError('conflict', 'The call is a rendezvous: take a seat (POST /v1/calls/{id}/seat).');
    if (call.direction !== 'web') {
      throw new AppError('conflict', 'Only web calls can be joined from a browser with this token; an operator joins a phone call with its claim’s token (POST /v1/calls/{id}/claim), and listeners are not supported yet.');
    }
    if (!isLive(call.status)) throw new AppError('conflict', `The call is over (${call.endReason ?? call.status}).`);
    if (call.status !== 'queued') throw new AppError('conflict', 'A browser is on this call already; a web call has one caller.');
    return { call, token: this.mintFor(call) };
  }

  /**
   * Claims ringing call `id` for `operator` (empty: API_CLAIMER): exactly one claim wins (CallsDomain.claim). The
   * winner gets the token that joins it: role `operator` on a phone call, role `seat` for the free seat of a
   * rendezvous. A claim of a call that is not ringing, not claimable, claimed or over is 409; another account's 404.
   */
  async claim(accountId: string, id: string, operator: string): Promise<{ call: CallEntity; token: MintedToken }> {
    if (operator.length > OPERATOR_MAX_LENGTH) throw AppError.validation([{ field: 'operator', message: `must be at most ${OPERATOR_MAX_LENGTH} characters` }]);
    const call = await this.calls.claim(accountId, id, operator || API_CLAIMER);
    const free = call.seats?.find((s) => !s.taken);
    return { call, token: free ? this.mintFor(call, free.name) : this.mintOperator(call, call.claimedBy ?? API_CLAIMER) };
  }

  /**
   * A console token: an operator console's session credential (no call; not single-use), for the ringing stream and
   * claims. A first mint names `operator` and starts a session of CONSOLE_SESSION_MAX_SECONDS; a refresh presents
   * the console's current token and keeps its operator and session end. Its window is `ttlSeconds` (0: the default),
   * never past the session's end.
   */
  mintConsole(accountId: string, request: { operator: string; ttlSeconds: number; refresh: string }): ConsoleToken {
    const ttl = request.ttlSeconds || CONSOLE_TOKEN_TTL_SECONDS;
    if (!Number.isInteger(ttl) || ttl < 60 || ttl > CONSOLE_TOKEN_MAX_TTL_SECONDS) {
      throw AppError.validation([{ field: 'ttl_seconds', message: `must be 60-${CONSOLE_TOKEN_MAX_TTL_SECONDS} seconds (0: ${CONSOLE_TOKEN_TTL_SECONDS})` }]);
    }
    const now = Math.floor(Date.now() / 1000);
    let operator = request.operator;
    let sessionExp = now + CONSOLE_SESSION_MAX_SECONDS;
    if (request.refresh) {
      const current = this.readConsole(request.refresh);
      if (current.account_id !== accountId) throw new AppError('unauthenticated', 'The console token belongs to another account.');
      operator = current.operator;
      sessionExp = current.session_exp;
    } else if (!operator || operator.length > OPERATOR_MAX_LENGTH) {
      throw AppError.validation([{ field: 'operator', message: `is required: 1-${OPERATOR_MAX_LENGTH} characters naming who holds the console` }]);
    }
    const claims: RealtimeTokenClaims = { jti: randomUUID(), account_id: accountId, call_id: '', role: 'console', operator, session_exp: sessionExp };
    return { token: this.sign(claims, Math.min(ttl, sessionExp - now), now * 1000), operator, sessionExpiresAt: new Date(sessionExp * 1000) };
  }

  /** The account and operator of a valid, unexpired console token; 401 for anything else (a call's token included). */
  verifyConsole(token: string): { accountId: string; operator: string; sessionExpiresAt: Date } {
    const claims = this.readConsole(token);
    return { accountId: claims.account_id, operator: claims.operator, sessionExpiresAt: new Date(claims.session_exp * 1000) };
  }

  private readConsole(token: string): RealtimeTokenClaims & { operator: string; session_exp: number } {
    const claims = token.startsWith(REALTIME_TOKEN_PREFIX) ? this.tokens.verify(token.slice(REALTIME_TOKEN_PREFIX.length)) : undefined;
    if (!claims || claims.role !== 'console' || !claims.operator || typeof claims.session_exp !== 'number') {
      throw new AppError('unauthenticated', 'The console token is invalid or expired; refresh it before it expires, or mint a new one from your server.');
    }
    // Minting never lets a window pass the session's end; checked here all the same, for refresh and verify alike.
    if (claims.session_exp * 1000 <= Date.now()) throw new AppError('unauthenticated', 'The console session ended; mint a new console token from your server.');
    return claims as RealtimeTokenClaims & { operator: string; session_exp: number };
  }

  /**
   * Redeems a browser's token at connect: the call it names becomes answered, and `commandAddress` is where
   * commands about it go. Refusals carry their reason (AppError extra `refusal`, the realtime socket's close code):
   * forged, expired, for another call (`callId`, when the browser names the call it means), used, or the call over.
   * A rendezvous' seat: the first seat taken rings the call, the second answers it. An operator's token (a claim's)
   * joins the claimed phone call and changes nothing on it: commands still go to the worker holding the phone's stream.
   */
  async join(token: string, callId: string, commandAddress: string): Promise<Joined> {
    const read = token.startsWith(REALTIME_TOKEN_PREFIX) ? this.tokens.read(token.slice(REALTIME_TOKEN_PREFIX.length)) : undefined;
    if (!read || read.claims.role === 'console') throw refused('token_invalid', 'The token is not a call token of this deployment (a console token joins no call).');
    if (read.expired) throw refused('token_expired', `The token's ${REALTIME_TOKEN_TTL_SECONDS} s window to connect passed; mint a new one.`);
    const claims = read.claims;
    if (callId && callId !== claims.call_id) throw refused('token_forbidden', 'The token was minted for another call.');
    const call = await this.calls.get(claims.account_id, claims.call_id).catch((error: unknown) => {
      throw error instanceof AppError && error.code === 'not_found' ? refused('call_over', 'The call does not exist.') : error;
    });
    if (!isLive(call.status)) throw refused('call_over', `The call is over (${call.endReason ?? call.status}).`);
    if (!(await this.calls.redeemRealtimeToken(claims.jti, call.id))) throw refused('token_used', 'The token was used already; each token opens one connection.');
    if (claims.role === 'seat' && claims.seat) return { call: await this.takeSeat(call, claims.seat, commandAddress), role: 'seat', seat: claims.seat };
    if (claims.role === 'operator') return { call, role: 'operator' };
    if (call.status !== 'queued') throw refused('token_forbidden', 'A browser is on this call already.');
    const pending = await this.calls.attachMedia(call.accountId, call.id, commandAddress || null);
    if (call.claimable) {
      // The caller is on the line: the call rings for a person (consoles see it) until one claims it.
      const ringing = await this.calls.transition(call.accountId, call.id, (c) => (c.status === 'queued' ? { status: 'ringing' } : undefined));
      this.calls.announceRinging(ringing);
      return { call: ringing, role: claims.role, awaitClaim: awaitsClaim(ringing), pending };
    }
    return { call: await this.calls.transition(call.accountId, call.id, (c) => (c.status === 'queued' ? { status: 'in_progress' } : undefined)), role: claims.role, pending };
  }

  /**
   * A seat's session ended: whether its client sent the copy of its microphone it was asked for, shown on the call's
   * seats (nothing of a seat that sent none is recorded or transcribed).
   */
  async reportSeatCopy(accountId: string, id: string, seat: string, sent: boolean): Promise<void> {
    await this.calls.amend(accountId, id, (current) => {
      const named = current.seats?.find((s) => s.name === seat);
      if (!named) throw AppError.validation([{ field: 'seat', message: 'the call has no such seat' }]);
      named.copy = sent;
      return [];
    });
  }

  /** Marks `seat` taken under the call's lock: the first seat rings the call, the second answers it (call.started). */
  private async takeSeat(call: CallEntity, seat: string, commandAddress: string): Promise<CallEntity> {
    await this.calls.attachMedia(call.accountId, call.id, commandAddress || null);
    const seated = await this.calls.transition(call.accountId, call.id, (current) => {
      const named = current.seats?.find((s) => s.name === seat);
      if (!isLive(current.status)) throw refused('call_over', `The call is over (${current.endReason ?? current.status}).`);
      if (!named || named.taken) throw refused('token_forbidden', `Seat ${seat} is taken already.`);
      named.taken = true;
      return { status: current.seats?.every((s) => s.taken) ? 'in_progress' : 'ringing' };
    });
    this.calls.announceRinging(seated);
    return seated;
  }

  private mintFor(call: CallEntity, seat?: string): MintedToken {
    return this.sign({ jti: randomUUID(), account_id: call.accountId, call_id: call.id, role: seat ? 'seat' : 'caller', ...(seat ? { seat } : {}) });
  }

  /** The claimer's token for the claimed phone call: single use, REALTIME_TOKEN_TTL_SECONDS, like any call's. */
  private mintOperator(call: CallEntity, operator: string): MintedToken {
    return this.sign({ jti: randomUUID(), account_id: call.accountId, call_id: call.id, role: 'operator', operator });
  }

  private sign(claims: RealtimeTokenClaims, ttlSeconds = REALTIME_TOKEN_TTL_SECONDS, now = Date.now()): MintedToken {
    const signed = this.tokens.sign(claims, ttlSeconds, now);
    return { token: `${REALTIME_TOKEN_PREFIX}${signed.token}`, expiresAt: signed.expiresAt, role: claims.role, ...(claims.seat ? { seat: claims.seat } : {}) };
  }
}
