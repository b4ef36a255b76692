// docs/grafana/panelctl.json: every PromQL expression in the dashboard (panel targets and
// template queries) names only metrics the daemon exposes, as its own registry lists them
// (`# TYPE` lines of a real exposition, with a histogram's _bucket, _sum and _count), and the
// dashboard covers what the issue asks for.
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { PrometheusMetrics, METRIC_NAMES } from '../../src/daemon/metrics/prometheus.js';

/** PromQL words that are not metric names: functions, aggregations, keywords. */
const PROMQL_WORDS = new Set([
  'sum', 'max', 'min', 'avg', 'count', 'by', 'without', 'rate', 'irate', 'increase', 'histogram_quantile', 'clamp_min', 'clamp_max',
  'label_values', 'topk', 'bottomk', 'and', 'or', 'unless', 'on', 'ignoring', 'group_left', 'group_right', 'offset', 'bool', 'abs', 'delta', 'deriv', 'time', 'vector', 'scalar',
]);

/** The metric names an expression reads: identifiers outside strings, label matchers, ranges and grouping clauses. */
export function metricNames(expr: string): string[] {
  const stripped = expr
    // Grafana's label_values(metric, label): the second argument is a label.
    .replace(/label_values\(\s*([^,)]*?)\s*,[^)]*\)/g, '$1')
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\b\d+(\.\d+)?(e[-+]?\d+)?\b/gi, ' ')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\$\w+/g, ' ');
  const names = new Set<string>();
  for (const match of stripped.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const word = match[0];
    const after = stripped.slice(match.index! + word.length).trimStart();
    if (PROMQL_WORDS.has(word) || after.startsWith('(')) continue;
    names.add(word);
  }
  return [...names];
}

/** Every sample name the daemon can expose, from the `# TYPE` lines of its registry. */
async function exposedNames(): Promise<Set<string>> {
  const { body } = await new PrometheusMetrics().exposition();
  const names = new Set<string>();
  for (const [, name, type] of body.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(name + suffix);
    else if (type === 'summary') for (const suffix of ['', '_sum', '_count']) names.add(name + suffix);
    else names.add(name);
  }
  return names;
}

interface Panel {
  type: string;
  title: string;
  targets?: Array<{ expr: string }>;
  panels?: Panel[];
}

describe('the Grafana dashboard', () => {
  it('names only metrics the daemon exposes, and shows the queue, attempts, lag, requests, 429s and lockouts', async () => {
    const dashboard = JSON.parse(await readFile(new URL('../../docs/grafana/panelctl.json', import.meta.url), 'utf8'));
    const panels: Panel[] = (dashboard.panels as Panel[]).flatMap((p) => [p, ...(p.panels ?? [])]);
    const expressions = [
      ...panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)),
      ...dashboard.templating.list.filter((v: { type: string }) => v.type === 'query').map((v: { definition: string }) => v.definition),
    ];
    expect(expressions.length).toBeGreaterThan(15);
    const exposed = await exposedNames();
    for (const name of METRIC_NAMES) expect(exposed.has(name) || exposed.has(`${name}_count`), `${name} is registered`).toBe(true);
    const used = new Set<string>();
    for (const expr of expressions) {
      const names = metricNames(expr);
      expect(names.length, `no metric in ${expr}`).toBeGreaterThan(0);
      for (const name of names) {
        expect(exposed.has(name), `${name} (in ${expr}) is not exposed by the daemon`).toBe(true);
        used.add(name);
      }
    }
    for (const wanted of [
      'panelctl_outbox_pending',
      'panelctl_outbox_oldest_pending_age_seconds',
      'panelctl_webhook_attempts_total',
      'panelctl_webhook_delivery_lag_seconds_bucket',
      'panelctl_http_requests_total',
      'panelctl_http_request_duration_seconds_bucket',
      'panelctl_rate_limited_total',
      'panelctl_login_lockouts_total',
    ]) {
      expect(used, `the dashboard shows ${wanted}`).toContain(wanted);
    }
    // Panels are placed on Grafana's 24-column grid.
    for (const panel of dashboard.panels as Array<{ gridPos: { x: number; w: number } }>) expect(panel.gridPos.x + panel.gridPos.w).toBeLessThanOrEqual(24);
  });

  it('reads metric names out of PromQL, leaving labels, functions and ranges alone', () => {
    expect(metricNames('histogram_quantile(0.95, sum by (le, route) (rate(a_bucket{instance=~"$instance",route="/x"}[$__rate_interval])))')).toEqual(['a_bucket']);
    expect(metricNames('sum(rate(b_total{outcome="failure"}[5m])) / clamp_min(sum(rate(b_total[5m])), 1e-9)')).toEqual(['b_total']);
    expect(metricNames('label_values(c_total, instance)')).toEqual(['c_total']);
  });
});
