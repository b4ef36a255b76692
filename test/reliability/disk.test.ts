// Disk trouble on a real file system: the data directory lives on a small tmpfs that fills up
// or is remounted read-only. Writes must answer a 5xx envelope and not be acknowledged, reads
// keep working, and the daemon recovers once the disk does. Needs root (mount); skipped otherwise.
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { initDataDir, startLoggedIn, type TestDaemon } from '../helpers/daemon.js';

function tryMount(dir: string): boolean {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m,mode=0700', 'tmpfs', dir], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const mountPoint = await mkdtemp(join(tmpdir(), 'panelctl-disk-'));
const mounted = tryMount(mountPoint);
if (!mounted) console.warn('disk trouble tests skipped: cannot mount a tmpfs here (needs root)');

async function fill(dir: string): Promise<void> {
  // Fill the tmpfs to the last byte: big chunks, then smaller ones.
  let i = 0;
  for (const size of [1 << 20, 64 << 10, 4 << 10, 512, 64, 8, 1]) {
    for (;;) {
      try {
        await writeFile(join(dir, `filler-${i++}`), Buffer.alloc(size));
      } catch {
        break;
      }
    }
  }
}

async function unfill(dir: string): Promise<void> {
  execFileSync('sh', ['-c', `rm -f ${dir}/filler-*`]);
}

describe.skipIf(!mounted)('disk trouble', () => {
  let daemon: TestDaemon;
  let token: string;
  const dataDir = join(mountPoint, 'data');
  const newUser = (email: string) => ({ email, name: 'Disk', password: 'disk-password-1', role: 'customer' });
  const emails = async () => ((await daemon.request('GET', '/admin/users', { token })).body.data as Array<{ email: string }>).map((u) => u.email);

  beforeAll(async () => {
    await initDataDir(dataDir);
    ({ daemon, admin: token } = await startLoggedIn({ dataDir, keep: true }));
  });
  // A test that fails midway must not leave the next one a full disk.
  afterEach(async () => unfill(mountPoint));
  afterAll(async () => {
    await daemon?.kill();
    try {
      execFileSync('mount', ['-o', 'remount,rw', mountPoint], { stdio: 'ignore' });
    } catch {
      // already rw
    }
    execFileSync('umount', ['-l', mountPoint], { stdio: 'ignore' });
    await rm(mountPoint, { recursive: true, force: true });
  });

  it('on a full disk: writes answer 201 (durable) or 503 (nothing kept), reads go on, kill -9 loses nothing, writes resume', async () => {
    expect((await daemon.request('POST', '/admin/users', { token, body: newUser('before@example.com') })).status).toBe(201);
    await fill(mountPoint);
    // An append may still fit in the journal's last page; sooner or later the disk refuses.
    const acknowledged: string[] = [];
    const refused: string[] = [];
    for (let i = 0; i < 400 && refused.length < 3; i++) {
      const email = `full-${i}@example.com`;
      const answer = await daemon.request('POST', '/admin/users', { token, body: newUser(email) });
      if (answer.status === 201) acknowledged.push(email);
      else {
        expect(answer.status).toBe(503);
        expect(answer.body).toEqual({ data: null, error: expect.any(String), message: expect.any(String) });
        expect(answer.headers['retry-after']).toBeDefined();
        refused.push(email);
      }
    }
    expect(refused.length).toBeGreaterThan(0);
    // Another kind of write: answered 200 only if it is on disk (a cut-back torn line can leave
    // room for a short one), else 503 with nothing changed.
    const settings = await daemon.request('PUT', '/admin/settings', { token, body: { login_max_attempts: 7 } });
    expect([200, 503]).toContain(settings.status);
    const attemptsAfter = settings.status === 200 ? 7 : 5;

    const read = await daemon.request('GET', '/admin/users', { token });
    expect(read.status).toBe(200);
    const during = await emails();
    expect(during).toEqual(expect.arrayContaining(['before@example.com', ...acknowledged]));
    for (const email of refused) expect(during).not.toContain(email);
    expect((await daemon.request('GET', '/admin/settings', { token })).body.data.login_max_attempts).toBe(attemptsAfter);

    // A crash on the full disk, then space comes back: the store opens cleanly with exactly the acknowledged writes.
    await daemon.kill();
    await unfill(mountPoint);
    daemon = await daemon.restart();
    token = await daemon.login();
    const after = await emails();
    expect(after).toEqual(expect.arrayContaining(['before@example.com', ...acknowledged]));
    for (const email of refused) expect(after).not.toContain(email);
    expect((await daemon.request('GET', '/admin/settings', { token })).body.data.login_max_attempts).toBe(attemptsAfter);
    expect((await daemon.request('POST', '/admin/users', { token, body: newUser('after@example.com') })).status).toBe(201);
    expect(await emails()).toContain('after@example.com');
  });

  it('refuses writes on a read-only disk, keeps serving reads, and recovers', async () => {
    execFileSync('mount', ['-o', 'remount,ro', mountPoint]);
    try {
      const refused = await daemon.request('POST', '/admin/users', { token, body: newUser('ro@example.com') });
      expect([500, 503]).toContain(refused.status);
      expect(refused.body.data).toBeNull();
      expect((await daemon.request('GET', '/admin/users', { token })).status).toBe(200);
      expect(await emails()).not.toContain('ro@example.com');
    } finally {
      execFileSync('mount', ['-o', 'remount,rw', mountPoint]);
    }
    expect((await daemon.request('POST', '/admin/users', { token, body: newUser('rw@example.com') })).status).toBe(201);
    expect(await emails()).toContain('rw@example.com');
  });
});
