import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/** A secret as stored: sealed with the deployment key, plus what may be shown. */
export interface SealedSecret {
  sealed: string;
  hint: string;
}

const VERSION = 'v1';

/**
 * Seals credentials at rest with AES-256-GCM under a key derived (HKDF-SHA256) from the deployment secret.
 * Format: `v1.<iv>.<tag>.<ciphertext>` (base64url); the tag authenticates, so a tampered value never decrypts.
 */
export class Sealer {
  private readonly key: Buffer;

  /** `purpose` separates keys per use, so a value sealed for one use never opens in another. */
  constructor(secret: string, purpose = 'agents:sealed-credentials') {
    this.key = Buffer.from(hkdfSync('sha256', secret, 'parley', purpose, 32));
  }

  seal(plain: string): SealedSecret {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    const sealed = [VERSION, iv, cipher.getAuthTag(), body].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
    return { sealed, hint: plain.slice(-4) };
  }

  unseal(secret: SealedSecret): string {
    const [version, iv, tag, body] = secret.sealed.split('.');
    if (version !== VERSION) throw new Error('unknown sealing version');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
  }
}
