// The components of `panelctl watch`, pure functions of the state: header (daemon, connection,
// counts), the attempts table, the detail pane, the status line and the help line.
import React from 'react';
import { Box, Text } from 'ink';
import {
  clean,
  detailLines,
  fit,
  headingLine,
  layoutColumns,
  rowCells,
  type DetailLine,
} from './format.js';
import { DETAIL_HELP, FILTER_HELP, HELP } from './keys.js';
import {
  COUNT_WINDOW_MS,
  countRecent,
  detailEntry,
  isRetryPending,
  retriedDeliveries,
  selectedIndex,
  STATUS_CLEAR_MS,
  troubledEndpoints,
  visibleEntries,
  type WatchQueue,
  type WatchState,
} from './state.js';

export interface ViewProps {
  state: WatchState;
  /** Epoch ms, for the counts' time window. */
  now: number;
  columns: number;
  rows: number;
  color: boolean;
}

/** Lines around the table or the detail pane: two header lines, the status and help lines. */
const HEADER_LINES = 2;
const FOOTER_LINES = 2;

/** Rows the table body can show on a terminal `rows` high (one line for its heading). */
export function tableHeight(rows: number): number {
  return Math.max(1, rows - HEADER_LINES - FOOTER_LINES - 1);
}

export function detailHeight(rows: number): number {
  return Math.max(1, rows - HEADER_LINES - FOOTER_LINES);
}

/** The first row shown so that the selected one is on screen. */
export function scrollOffset(selected: number, height: number): number {
  return Math.max(0, selected - height + 1);
}

const paint = (color: boolean, name: string) => (color && name ? name : undefined);

/** The connection state as the header shows it: a mark, a word, and why (when known). */
export function connectionText(connection: WatchState['connection']): { text: string; tone: string } {
  const detail = connection.detail ? `: ${clean(connection.detail)}` : '';
  switch (connection.state) {
    case 'connected':
      return { text: '● connected', tone: 'green' };
    case 'connecting':
      return { text: '◌ connecting…', tone: 'yellow' };
    case 'reconnecting':
      return { text: `↻ reconnecting${detail}`, tone: 'yellow' };
    case 'closed':
      return { text: `✗ stream closed${detail}`, tone: 'red' };
  }
}

/** `12 (oldest 3m 5s)`: the daemon's pending deliveries and the oldest one's age. */
export function queueText(queue: WatchQueue): string {
  if (queue.pending === 0 || queue.oldestAgeSeconds === null) return String(queue.pending);
  const s = queue.oldestAgeSeconds;
  const age = s < 60 ? `${s}s` : s < 3600 ? `${Math.floor(s / 60)}m ${s % 60}s` : `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${queue.pending} (oldest ${age})`;
}

export function Header({ state, now, columns, color }: ViewProps) {
  const counts = countRecent(state.entries, now);
  const scope = state.endpointScope ? `  endpoint #${state.endpointScope}` : '';
  const filters = [state.failedOnly ? 'failed only' : '', state.eventFilter ? `event ~ "${clean(state.eventFilter)}"` : '']
    .filter(Boolean)
    .join(', ');
  const minutes = Math.round(COUNT_WINDOW_MS / 60_000);
  const where = ` ${clean(state.baseUrl)}${scope}`;
  const title = `panelctl watch${where}`;
  // The title keeps at least half the line; the connection state (its reason can be long) the rest.
  const badge = connectionText(state.connection);
  const troubled = troubledEndpoints(state);
  const trouble = troubled
    .slice(0, 3)
    .map((e) => `#${e.id} ${e.active === false ? 'disabled' : `${e.health!.consecutive_failures} failing`}`)
    .join(', ');
  const paused = Object.values(state.endpoints).filter((e) => e.paused !== undefined);
  const pausedText = paused
    .slice(0, 3)
    .map((e) => `#${e.id} ${e.paused} kept`)
    .join(', ');
  const badgeWidth = Math.max(14, columns - Math.min([...title].length, Math.floor(columns / 2)) - 1);
  return (
    <Box flexDirection="column" width={columns}>
      <Box justifyContent="space-between" width={columns}>
        <Text wrap="truncate">
          <Text bold>panelctl watch</Text>
          {where}
        </Text>
        <Box flexShrink={0} marginLeft={1}>
          <Text color={paint(color, badge.tone)}>{fit(badge.text, badgeWidth).trimEnd()}</Text>
        </Box>
      </Box>
      <Box justifyContent="space-between" width={columns}>
        <Text wrap="truncate">
          last {minutes} min: {counts.sent} sent · <Text color={paint(color, 'green')}>{counts.ok} ok</Text> ·{' '}
          <Text color={paint(color, counts.failed ? 'red' : '')}>{counts.failed} failed</Text> ·{' '}
          <Text color={paint(color, counts.pendingRetries ? 'yellow' : '')}>{counts.pendingRetries} retry pending</Text>
          {state.queue ? <Text> · queue {queueText(state.queue)}</Text> : null}
          {pausedText ? (
            <Text color={paint(color, 'yellow')}>
              {' '}
              · paused {pausedText}
              {paused.length > 3 ? ` +${paused.length - 3}` : ''}
            </Text>
          ) : null}
          {trouble ? (
            <Text color={paint(color, 'red')}>
              {' '}
              · ⚠ {trouble}
              {troubled.length > 3 ? ` +${troubled.length - 3}` : ''}
            </Text>
          ) : null}
        </Text>
        {filters ? (
          <Box flexShrink={0} marginLeft={1}>
            <Text color={paint(color, 'cyan')}>[{filters}]</Text>
          </Box>
        ) : null}
      </Box>
    </Box>
  );
}

export function Table({ state, columns, rows, color }: ViewProps) {
  const layout = layoutColumns(columns);
  const visible = visibleEntries(state);
  const height = tableHeight(rows);
  const selected = selectedIndex(state, visible);
  const offset = scrollOffset(selected, height);
  const retried = retriedDeliveries(state.entries);
  const empty = state.entries.length ? 'no attempt matches the filters (f toggles failed-only, / edits the event filter)' : 'waiting for deliveries…';
  return (
    <Box flexDirection="column" height={height + 1} width={columns}>
      <Text bold wrap="truncate">
        {headingLine(layout)}
      </Text>
      {visible.length === 0 ? (
        <Text dimColor wrap="truncate">
          {'  '}
          {empty}
        </Text>
      ) : (
        visible.slice(offset, offset + height).map((entry, i) => {
          const isSelected = offset + i === selected;
          const cells = rowCells(entry, state.endpoints[entry.endpoint_id], layout, isRetryPending(entry, retried));
          const outcome = paint(color, entry.success ? 'green' : 'red');
          return (
            <Text key={entry.id} wrap="truncate" inverse={isSelected && color} bold={isSelected && !color}>
              {isSelected ? '› ' : '  '}
              {cells.time} {cells.endpoint} {cells.event}{' '}
              <Text color={paint(color, entry.attempt > 1 ? 'yellow' : '')}>{cells.attempt}</Text>{' '}
              <Text color={outcome}>{cells.code}</Text> {cells.duration} <Text color={outcome}>{cells.result}</Text>
            </Text>
          );
        })
      )}
    </Box>
  );
}

const LINE_COLOURS: Record<DetailLine['kind'], string> = {
  title: 'cyan',
  heading: 'cyan',
  body: '',
  ok: 'green',
  error: 'red',
  dim: 'gray',
};

/** How far the detail pane can scroll for this entry and terminal. */
export function detailMaxScroll(state: WatchState, columns: number, rows: number): number {
  const entry = detailEntry(state);
  if (!entry) return 0;
  const lines = detailLines(entry, state.endpoints[entry.endpoint_id], columns, isRetryPending(entry, retriedDeliveries(state.entries)));
  return Math.max(0, lines.length - detailHeight(rows));
}

export function DetailPane({ state, columns, rows, color }: ViewProps) {
  const entry = detailEntry(state);
  const height = detailHeight(rows);
  if (!entry) return <Box height={height} />;
  const lines = detailLines(entry, state.endpoints[entry.endpoint_id], columns, isRetryPending(entry, retriedDeliveries(state.entries)));
  const scroll = Math.min(state.detail?.scroll ?? 0, Math.max(0, lines.length - height));
  return (
    <Box flexDirection="column" height={height} width={columns}>
      {lines.slice(scroll, scroll + height).map((line, i) => (
        <Text
          key={scroll + i}
          wrap="truncate"
          bold={line.kind === 'title' || line.kind === 'heading'}
          dimColor={line.kind === 'dim'}
          color={paint(color, LINE_COLOURS[line.kind])}
        >
          {line.text || ' '}
        </Text>
      ))}
    </Box>
  );
}

export function StatusLine({ state, now, columns, color }: ViewProps) {
  if (state.filterDraft !== null) {
    return (
      <Text wrap="truncate">
        <Text color={paint(color, 'cyan')}>/</Text>
        {clean(state.filterDraft)}
        <Text inverse> </Text>
        <Text dimColor>{`  ${FILTER_HELP}`}</Text>
      </Text>
    );
  }
  const status = state.status;
  // A finished action's outcome (it carries its time) goes after a while: a line saying a test
  // passed minutes ago reads as news. Progress messages stay until their outcome replaces them.
  if (!status || (status.at !== undefined && now - status.at >= STATUS_CLEAR_MS)) return <Text> </Text>;
  const tone = status.tone === 'error' ? 'red' : status.tone === 'ok' ? 'green' : '';
  return (
    <Text wrap="truncate" color={paint(color, tone)}>
      {fit(clean(status.text), columns).trimEnd() || ' '}
    </Text>
  );
}

export function HelpLine({ state }: ViewProps) {
  return (
    <Text dimColor wrap="truncate">
      {state.detail ? DETAIL_HELP : HELP}
    </Text>
  );
}

/** The whole screen, `rows` lines high. */
export function WatchView(props: ViewProps) {
  return (
    <Box flexDirection="column" width={props.columns} height={props.rows}>
      <Header {...props} />
      {props.state.detail ? <DetailPane {...props} /> : <Table {...props} />}
      <StatusLine {...props} />
      <HelpLine {...props} />
    </Box>
  );
}
