import { Inject, Injectable } from '@nestjs/common';
import { FastifyReply } from 'fastify';
import { GatewayConfig, resolveSecretKey } from '@parley/config';
import { SignedTokens } from '@parley/persistence';
import { AppError } from '@parley/rpc';
import { CONFIG } from '@parley/runtime';
import { BlobStore } from '@parley/storage';

export const BLOB_STORE = Symbol('BLOB_STORE');
/** Public path of playable recording links: `/recordings/{call_id}.wav?token=…`. */
export const RECORDING_LINK_PATH = '/recordings';

interface RecordingClaims {
  call_id: string;
  key: string;
}

/**
 * Serves recordings from the store the media worker writes them to, to key holders (`/v1/calls/{id}/recording`)
 * and to anyone with an unexpired signed link (`/recordings/…?token=`, for an audio element or a CRM).
 */
@Injectable()
export class Recordings {
  private readonly tokens: SignedTokens<RecordingClaims>;

  constructor(
    @Inject(BLOB_STORE) private readonly store: BlobStore,
    @Inject(CONFIG) private readonly config: GatewayConfig,
  ) {
    this.tokens = new SignedTokens(resolveSecretKey(config), 'recording-link');
  }

  link(_accountId: string, callId: string, key: string): { url: string; expiresAt: Date } {
    const { token, expiresAt } = this.tokens.sign({ call_id: callId, key }, this.config.RECORDING_URL_TTL_SECONDS);
    const base = this.config.PUBLIC_URL.replace(/\/+$/, '');
    return { url: `${base}${RECORDING_LINK_PATH}/${encodeURIComponent(callId)}.wav?token=${encodeURIComponent(token)}`, expiresAt };
  }

  /** The stored key a link grants, when its token is genuine, unexpired and for this call. */
  keyFromLink(callId: string, token: string): string {
    const claims = this.tokens.verify(token);
    if (!claims || claims.call_id !== callId) throw new AppError('unauthenticated', 'The recording link is invalid or has expired; ask for a new one.');
    return claims.key;
  }

  async send(reply: FastifyReply, callId: string, key: string): Promise<void> {
    const object = await this.store.get(key);
    if (!object) throw AppError.notFound('recording');
    await reply
      .header('content-type', object.contentType)
      .header('content-length', String(object.size))
      .header('content-disposition', `inline; filename="${callId}.wav"`)
      .header('cache-control', 'private, max-age=300')
      .send(object.body);
  }
}
