// Loaded into every test file (vitest `setupFiles`): children of a failed or timed-out test are
// ended right after it, and every child of the file once the file is done.
import { afterAll, afterEach, beforeEach } from 'vitest';
import { enterTest, killTracked } from './processes.js';

beforeEach(() => enterTest(true));
afterEach(async (context) => {
  enterTest(false);
  if (context.task.result?.state === 'fail') await killTracked('test');
});
afterAll(async () => {
  await killTracked('all');
});
