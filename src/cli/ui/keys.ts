// Key bindings of `panelctl watch`: a pure map from (state, key) to what should happen, so the
// bindings are read in one place and tested without a terminal.
import type { WatchAction, WatchState } from './state.js';

/** The subset of ink's `Key` the bindings look at. */
export interface KeyInfo {
  upArrow?: boolean;
  downArrow?: boolean;
  pageUp?: boolean;
  pageDown?: boolean;
  home?: boolean;
  end?: boolean;
  return?: boolean;
  escape?: boolean;
  ctrl?: boolean;
  meta?: boolean;
  backspace?: boolean;
  delete?: boolean;
  tab?: boolean;
}

export type Intent =
  | { kind: 'action'; action: WatchAction }
  | { kind: 'test' }
  | { kind: 'redeliver' }
  | { kind: 'quit' };

const act = (action: WatchAction): Intent => ({ kind: 'action', action });

export const HELP = '↑↓/jk select  ⏎ details  t test  r redeliver  f failed-only  / filter  q quit';
export const DETAIL_HELP = 'Esc/⏎ close  ↑↓/jk scroll  t test  r redeliver  q quit';
export const FILTER_HELP = 'type an event name  ⏎ apply  Esc clear';

/** What a key press means in the current state; null when it means nothing. */
export function intentFor(state: WatchState, input: string, key: KeyInfo, pageSize = 10): Intent | null {
  if (key.ctrl && input === 'c') return { kind: 'quit' };

  if (state.filterDraft !== null) {
    if (key.return) return act({ type: 'filterApply' });
    if (key.escape) return act({ type: 'filterClear' });
    if (key.backspace || key.delete) return act({ type: 'filterBackspace' });
    if (key.ctrl || key.meta || key.tab || key.upArrow || key.downArrow || !input) return null;
    // Printable text only (a paste may bring several characters at once).
    const text = input.replace(/[\x00-\x1f\x7f]/g, '');
    return text ? act({ type: 'filterType', text }) : null;
  }

  if (state.detail) {
    if (key.escape || key.return) return act({ type: 'closeDetail' });
    if (key.upArrow || input === 'k') return act({ type: 'scrollDetail', delta: -1 });
    if (key.downArrow || input === 'j') return act({ type: 'scrollDetail', delta: 1 });
    if (key.pageUp) return act({ type: 'scrollDetail', delta: -pageSize });
    if (key.pageDown || input === ' ') return act({ type: 'scrollDetail', delta: pageSize });
  } else {
    if (key.upArrow || input === 'k') return act({ type: 'move', delta: -1 });
    if (key.downArrow || input === 'j') return act({ type: 'move', delta: 1 });
    if (key.pageUp) return act({ type: 'move', delta: -pageSize });
    if (key.pageDown) return act({ type: 'move', delta: pageSize });
    if (key.home || input === 'g') return act({ type: 'moveTo', where: 'top' });
    if (key.end || input === 'G') return act({ type: 'moveTo', where: 'bottom' });
    if (key.return) return act({ type: 'openDetail' });
    if (key.escape) return state.eventFilter ? act({ type: 'filterClear' }) : null;
    if (input === 'f') return act({ type: 'toggleFailed' });
    if (input === '/') return act({ type: 'filterStart' });
  }
  if (key.ctrl || key.meta) return null;
  if (input === 't') return { kind: 'test' };
  if (input === 'r') return { kind: 'redeliver' };
  if (input === 'q') return { kind: 'quit' };
  return null;
}

/**
 * A terminal may deliver several keys in one read (key repeat, a paste, `tmux send-keys j Enter`);
 * ink then reports them as one input. Splits such a burst into single keys, so each is bound
 * against the state the previous one left (`/` then the filter text, say).
 */
export function splitKeys(input: string, key: KeyInfo): Array<{ input: string; key: KeyInfo }> {
  if (input.length <= 1 || key.ctrl || key.meta || input.includes('\x1b')) return [{ input, key }];
  return [...input].map((char) => {
    if (char === '\r' || char === '\n') return { input: '', key: { return: true } };
    if (char === '\x7f' || char === '\b') return { input: '', key: { backspace: true } };
    if (char === '\t') return { input: '', key: { tab: true } };
    if (char === '\x03') return { input: 'c', key: { ctrl: true } };
    return { input: char, key: {} };
  });
}
