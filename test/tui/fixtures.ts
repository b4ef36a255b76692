// Entries, endpoints and a scripted data source for the watch view's component tests.
import type { WatchSource } from '../../src/cli/ui/source.js';
import { vi } from 'vitest';
import type { WatchAction, WatchEndpoint, WatchEntry, WatchState, WatchStore } from '../../src/cli/ui/state.js';

export const NOW = Date.parse('2025-05-01T12:00:00.000Z');

export const ENDPOINTS: WatchEndpoint[] = [
  { id: 1, url: 'https://ok.example.test/hooks', host: 'ok.example.test' },
  { id: 2, url: 'https://broken.example.test:8443/in', host: 'broken.example.test:8443' },
];

let nextId = 1;

export function entry(overrides: Partial<WatchEntry> = {}): WatchEntry {
  const id = overrides.id ?? nextId++;
  return {
    id,
    delivery_id: `d-${id}`,
    endpoint_id: 1,
    event: 'site.created',
    payload: { event: 'site.created', timestamp: '2025-05-01T11:59:00.000Z', data: { site_id: 7, domain: 'shop.example' } },
    attempt: 1,
    status_code: 200,
    response: 'ok',
    success: true,
    duration_ms: 42,
    created_at: new Date(NOW - 60_000 + id * 1000).toISOString(),
    reason: null,
    ...overrides,
  };
}

/** A source the test drives: it pushes actions as the real one would, and records key actions. */
export class ScriptedSource implements WatchSource {
  dispatch: (action: WatchAction) => void = () => {
    throw new Error('not started');
  };
  started = 0;
  stopped = 0;
  tests: number[] = [];
  redeliveries: Array<[number, number]> = [];
  answer: (kind: 'test' | 'redeliver', endpointId: number) => Promise<WatchEntry> = async (_kind, endpointId) =>
    entry({ endpoint_id: endpointId, event: 'webhook.test', created_at: new Date(NOW).toISOString() });

  start(dispatch: (action: WatchAction) => void): () => void {
    this.dispatch = dispatch;
    this.started++;
    return () => {
      this.stopped++;
    };
  }

  test(endpointId: number): Promise<WatchEntry> {
    this.tests.push(endpointId);
    return this.answer('test', endpointId);
  }

  redeliver(endpointId: number, entryId: number): Promise<WatchEntry> {
    this.redeliveries.push([endpointId, entryId]);
    return this.answer('redeliver', endpointId);
  }
}

/**
 * Watches what ink writes to the fake terminal of `app`, and returns `shown()`: it resolves once
 * a frame of the store's current state has been written. Keys and the source change the store
 * at once; ink renders the change a moment later, and a test waits for that frame, not a time.
 * Call it right after render() (before anything changes the store).
 */
export function trackFrames(app: { stdout: { write(frame: string): void }; frames: string[] }, store: WatchStore): () => Promise<void> {
  let rendered: WatchState | null = app.frames.length > 0 ? store.getState() : null;
  const write = app.stdout.write.bind(app.stdout);
  app.stdout.write = (frame: string) => {
    rendered = store.getState();
    write(frame);
  };
  return () =>
    vi.waitFor(
      () => {
        if (rendered !== store.getState()) throw new Error('no frame of the current state yet');
      },
      { interval: 1 },
    );
}

export const KEYS = {
  up: '\u001B[A',
  down: '\u001B[B',
  pageDown: '\u001B[6~',
  enter: '\r',
  escape: '\u001B',
  ctrlC: '\u0003',
  backspace: '\u007F',
};
