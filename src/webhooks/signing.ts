import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

/**
 * Signatures on the Standard Webhooks scheme, by its reference library (`standardwebhooks`): each
 * delivery carries `webhook-id`, `webhook-timestamp` and `webhook-signature`, which a receiver
 * checks with `new Webhook(secret).verify(body, headers)`. After a rotation the previous secret
 * still signs for 24 hours: `webhook-signature` then lists one `v1,…` signature per secret,
 * separated by spaces, as the scheme allows, so that a receiver holding either secret verifies.
 */

/** A new secret: `whsec_` and the base64 of 32 random bytes. */
export const newSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

/** The signers of an endpoint's secrets (the current one first). */
export const signersOf = (secrets: readonly string[]): Webhook[] => secrets.map((secret) => new Webhook(secret));

/** The three headers of one attempt, signed with every secret given. */
export function signedHeaders(signers: readonly Webhook[], eventId: number, at: Date, body: string): Record<string, string> {
  const id = String(eventId);
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signers.map((signer) => signer.sign(id, at, body)).join(' '),
  };
}
