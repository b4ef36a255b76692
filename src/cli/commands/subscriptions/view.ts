// How a subscription reads in a terminal.
import type { Subscription } from '../../api-types.js';
import type { Column, Ui } from '../../output.js';

export function subscriptionColumns(ui: Ui): Column<Subscription>[] {
  return [
    { header: 'id', value: (s) => String(s.id) },
    { header: 'domain', value: (s) => s.main_domain, shrink: true },
    { header: 'customer', value: (s) => String(s.customer_id) },
    { header: 'default', value: (s) => (s.is_default ? 'yes' : 'no') },
    { header: 'status', value: (s) => s.status, style: (text, s) => (s.status === 'active' ? ui.c.green(text) : ui.c.yellow(text)) },
    { header: 'created', value: (s) => ui.time(s.created_at) },
  ];
}

export function showSubscription(ui: Ui, s: Subscription): void {
  ui.record([
    ['id', String(s.id)],
    ['domain', s.main_domain],
    ['customer', String(s.customer_id)],
    ['default', s.is_default ? 'yes' : 'no'],
    ['status', s.status],
    ['created', ui.time(s.created_at)],
  ]);
}
