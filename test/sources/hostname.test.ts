// The host-name rule shared by sites and subscriptions: what is accepted, how it is spelled
// once stored, and that every refusal names the broken rule.
import { describe, expect, it } from 'vitest';
import { normaliseHostname } from '../../src/shared/hostname.js';

describe('normaliseHostname', () => {
  it.each([
    ['example.com', 'example.com'],
    ['WWW.Example.COM', 'www.example.com'],
    ['example.com.', 'example.com'],
    ['a-b.c-d.example', 'a-b.c-d.example'],
    ['1password.example', '1password.example'],
    ['Bücher.example', 'xn--bcher-kva.example'],
    ['xn--bcher-kva.example', 'xn--bcher-kva.example'],
    ['例え.テスト', 'xn--r8jz45g.xn--zckzah'],
    ['ex\u3002example', 'ex.example'],
    [`${'a'.repeat(63)}.example`, `${'a'.repeat(63)}.example`],
    [`${'abcdefghi.'.repeat(24)}example`, `${'abcdefghi.'.repeat(24)}example`],
  ])('accepts %j as %j', (input, expected) => {
    expect(normaliseHostname(input)).toEqual({ value: expected });
  });

  it.each([
    ['', /empty/],
    ['localhost', /two labels/],
    ['com', /two labels/],
    ['.example.com', /empty labels/],
    ['a..example', /empty labels/],
    ['example.com..', /empty labels/],
    ['-a.example', /hyphen/],
    ['a-.example', /hyphen/],
    ['under_score.example', /"_"/],
    ['*.example.com', /"\*"/],
    ['a b.example', /" "/],
    ['tab\there.example', /"\\t"/],
    ['a.example/path', /"\/"/],
    ['a.example:443', /":"/],
    ['user@a.example', /"@"/],
    ['127.0.0.1', /top-level/],
    ['example.123', /top-level/],
    ['xn--zz.example', /punycode/],
    ['bad\u00ad\uff0f.example', /internationalised/],
    [`${'a'.repeat(64)}.example`, /63/],
    [`${'abcdefghi.'.repeat(25)}example`, /253/],
  ])('refuses %j', (input, reason) => {
    const result = normaliseHostname(input);
    expect(result).toHaveProperty('error');
    expect((result as { error: string }).error).toMatch(reason);
  });
});
