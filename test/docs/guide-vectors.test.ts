// The signature test vectors of docs/integrators.md, read from the markdown and recomputed with
// node:crypto as an integrator in another language would (the secret's text bytes as the key;
// only a Standard Webhooks secret is decoded), and with the daemon's own signer: a vector the
// daemon would not produce, or a guide a reader could not check against, fails here.
import { createHmac } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { standardSignature } from '../../src/daemon/dispatcher/headers.js';
import { signature } from '../../src/daemon/dispatcher/signer.js';

const guide = await readFile(fileURLToPath(new URL('../../docs/integrators.md', import.meta.url)), 'utf8');

/** Each `<!-- vector: scheme -->` block as its `name: value` lines. */
const vectors = [...guide.matchAll(/<!-- vector: (\S+) -->\n```text\n([\s\S]*?)```/g)].map(([, scheme, block]) => ({
  scheme,
  fields: Object.fromEntries(
    block
      .trimEnd()
      .split('\n')
      .map((line) => {
        const at = line.indexOf(': ');
        return [line.slice(0, at), line.slice(at + 2)];
      }),
  ) as Record<string, string>,
}));

describe('the signature vectors of the integrator guide', () => {
  it('has the default scheme (also with a hex-looking secret) and the Standard Webhooks one', () => {
    expect(vectors.map((v) => v.scheme)).toEqual(['seed', 'seed', 'standard-webhooks']);
    expect(vectors[1].fields.secret).toMatch(/^[0-9a-f]{64}$/);
  });

  for (const [index, { scheme, fields }] of vectors.entries()) {
    it(`vector ${index + 1} (${scheme}): the expected values are what HMAC-SHA256 over the text gives, and what the daemon sends`, () => {
      const expected = `sha256=${createHmac('sha256', Buffer.from(fields.secret, 'utf8')).update(Buffer.from(fields.body, 'utf8')).digest('hex')}`;
      expect(fields['X-Webhook-Signature']).toBe(expected);
      expect(signature(fields.body, fields.secret)).toBe(expected);
      if (scheme !== 'standard-webhooks') return;
      const key = Buffer.from(fields.secret.slice('whsec_'.length), 'base64');
      const signed = `${fields['webhook-id']}.${fields['webhook-timestamp']}.${fields.body}`;
      const v1 = `v1,${createHmac('sha256', key).update(signed, 'utf8').digest('base64')}`;
      expect(fields['webhook-signature']).toBe(v1);
      expect(standardSignature(fields['webhook-id'], Number(fields['webhook-timestamp']), fields.body, fields.secret)).toBe(v1);
    });
  }

  it('states that the secret is never hex-decoded, and what decoding would wrongly give', () => {
    const { secret, body } = vectors[1].fields;
    const wrong = `sha256=${createHmac('sha256', Buffer.from(secret, 'hex')).update(body).digest('hex')}`;
    expect(guide).toContain(`hex-decoding it would give\n\`${wrong}\`, which is wrong`);
    expect(guide).toMatch(/never\s+hex-decode/);
    expect(guide).toContain('base64-decoded part after `whsec_`');
  });
});
