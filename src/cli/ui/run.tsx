// Mounts the watch app full screen (the terminal's alternate screen, restored on exit) and
// resolves when the user quits. Imported lazily by the watch command only, so other commands
// never load ink or react.
import React from 'react';
import { render } from 'ink';
import type { ApiClient } from '../api-client.js';
import { WatchApp } from './app.js';
import { apiWatchSource, type WatchSource } from './source.js';
import type { WatchEndpoint, WatchStore } from './state.js';

export interface RunWatchOptions {
  client: ApiClient;
  baseUrl: string;
  endpointId?: number;
  endpoints: WatchEndpoint[];
  failedOnly: boolean;
  color: boolean;
  stdin: NodeJS.ReadStream;
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
  /** A source already started into `store` (watch connects while ink loads); else one is made here. */
  source?: WatchSource;
  store?: WatchStore;
}

const ENTER_ALT_SCREEN = '\x1b[?1049h\x1b[H';
const LEAVE_ALT_SCREEN = '\x1b[?1049l';
const SHOW_CURSOR = '\x1b[?25h';

export async function runWatch(options: RunWatchOptions): Promise<void> {
  const { stdout } = options;
  let restored = false;
  const restore = () => {
    if (restored) return;
    restored = true;
    stdout.write(SHOW_CURSOR + LEAVE_ALT_SCREEN);
  };
  // Last resort: a crash or process.exit still gives the user their screen back.
  process.once('exit', restore);
  stdout.write(ENTER_ALT_SCREEN);

  const source = options.source ?? apiWatchSource(options.client, { endpointId: options.endpointId, endpoints: options.endpoints });
  const app = render(
    <WatchApp
      source={source}
      baseUrl={options.baseUrl}
      endpointId={options.endpointId}
      failedOnly={options.failedOnly}
      color={options.color}
      store={options.store}
    />,
    { stdin: options.stdin, stdout, stderr: options.stderr, exitOnCtrlC: false, maxFps: 20 },
  );
  // A terminal closed or a polite kill ends the view like `q` does.
  const quit = () => app.unmount();
  process.once('SIGTERM', quit);
  process.once('SIGHUP', quit);
  try {
    await app.waitUntilExit();
  } finally {
    process.off('SIGTERM', quit);
    process.off('SIGHUP', quit);
    app.cleanup();
    restore();
    process.off('exit', restore);
  }
}
