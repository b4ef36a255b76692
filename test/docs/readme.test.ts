// What the README promises a newcomer, checked against the repository: its links stay inside it
// (the contract and the service description live outside and are named, not linked), it says
// where the admin password went when `npm start` ran first, and package.json's allowScripts
// approves every install script the lockfile holds, so `npm install` has none left to warn about.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const readme = await readFile(join(ROOT, 'README.md'), 'utf8');

describe('README', () => {
  it('links only to files of the repository', () => {
    const links = [...readme.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]);
    expect(links.length).toBeGreaterThan(3);
    for (const link of links) {
      expect(link, link).not.toMatch(/^(\/|\.\.\/|file:)/);
      if (/^[a-z]+:/i.test(link)) continue;
      expect(existsSync(join(ROOT, link.split('#')[0])), link).toBe(true);
    }
    expect(readme).not.toContain('shared/spec');
  });

  it('says where the admin password went when npm start initialised the data directory', () => {
    expect(readme).toMatch(/if you ran `npm start`, that\s+is where it was printed \(step 1 then prints none\)/);
  });

  it('explains step 0 (why npm link needs NPM_CONFIG_PREFIX) and the local step 6', () => {
    expect(readme).toContain('NPM_CONFIG_PREFIX=~/.local npm link');
    expect(readme).toMatch(/The flag `--prefix ~\/\.local` would not\s+do/);
    expect(readme).toContain('NODE_EXTRA_CA_CERTS=$DATA/tls/cert.pem panelctl daemon start --allow-private-webhooks');
    expect(readme).toMatch(/--tls-cert\s+\/etc\/panelctl\/tls\/cert\.pem --tls-key \/etc\/panelctl\/tls\/key\.pem/);
  });
});

describe('package.json allowScripts', () => {
  it("approves every lockfile package with an install script (npm's install-scripts warning)", async () => {
    const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { allowScripts?: Record<string, boolean> };
    const lock = JSON.parse(await readFile(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { hasInstallScript?: boolean }> };
    const withScripts = Object.entries(lock.packages)
      .filter(([path, entry]) => path && entry.hasInstallScript)
      .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length));
    expect(withScripts).toContain('esbuild');
    for (const name of withScripts) expect(pkg.allowScripts?.[name], name).toBe(true);
  });
});
