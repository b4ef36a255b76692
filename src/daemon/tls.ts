// The daemon's self-signed certificate for localhost (SAN: localhost, 127.0.0.1, ::1).

export interface KeyPair {
  cert: string;
  key: string;
}

/** A new self-signed pair; selfsigned (and node-forge) load only when a pair is made. */
export async function generateCertificate(days = 825): Promise<KeyPair> {
  const { default: selfsigned } = await import('selfsigned');
  const attrs = [{ name: 'commonName', value: 'panelctl localhost' }];
  const pems = selfsigned.generate(attrs, {
    keySize: 2048,
    days,
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: true },
      { name: 'keyUsage', keyCertSign: true, digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: 'localhost' },
          { type: 7, ip: '127.0.0.1' },
          { type: 7, ip: '::1' },
        ],
      },
    ],
  });
  return { cert: pems.cert, key: pems.private };
}
