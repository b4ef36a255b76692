// The command tree as plain data, read from the very commander program the CLI runs, plus
// the value hints commander does not know (event names, setting keys, files): completions and
// the man page are generated from it, so they cannot drift from the commands.
import type { Command, Option } from 'commander';
import { EVENT_NAMES } from '../../shared/events.js';
import { SETTING_KEYS } from '../../shared/settings.js';

/** What a value can be completed with. */
export type ValueHint =
  | { kind: 'words'; words: string[] }
  /** A comma-separated list of words (webhooks --events). */
  | { kind: 'list'; words: string[] }
  | { kind: 'file' }
  | { kind: 'dir' }
  | { kind: 'none' };

export interface OptionSpec {
  long: string;
  short?: string;
  /** e.g. "url" for `--url <url>`; undefined for a flag. */
  valueName?: string;
  description: string;
  hint: ValueHint;
  mandatory: boolean;
  envVar?: string;
  defaultValue?: string;
}

export interface ArgSpec {
  name: string;
  required: boolean;
  variadic: boolean;
  description: string;
  hint: ValueHint;
}

export interface CommandSpec {
  /** Words after `panelctl`, e.g. ["webhooks", "create"]; [] for the program. */
  path: string[];
  name: string;
  description: string;
  options: OptionSpec[];
  args: ArgSpec[];
  subcommands: CommandSpec[];
}

const EVENTS: ValueHint = { kind: 'words', words: [...EVENT_NAMES] };

/** Hints for option values, by long flag (the same flag means the same thing everywhere). */
const OPTION_HINTS: Record<string, ValueHint> = {
  '--events': { kind: 'list', words: ['*', ...EVENT_NAMES] },
  '--ca': { kind: 'file' },
  '--tls-cert': { kind: 'file' },
  '--tls-key': { kind: 'file' },
  '--data-dir': { kind: 'dir' },
};

/** Hints for positional arguments, by "command path <arg>". */
const ARG_HINTS: Record<string, ValueHint> = {
  'events emit <event>': EVENTS,
  'settings get <key>': { kind: 'words', words: [...SETTING_KEYS] },
  'settings set <key>': { kind: 'words', words: [...SETTING_KEYS] },
};

const HELP_OPTION: OptionSpec = { long: '--help', short: '-h', description: 'display help for command', hint: { kind: 'none' }, mandatory: false };

function optionSpec(option: Option): OptionSpec | null {
  if (option.hidden || !option.long) return null;
  const valueMatch = /[<[]([^>\]]+)[>\]]/.exec(option.flags);
  const valueName = option.required || option.optional ? (valueMatch?.[1] ?? 'value').replace(/\.\.\.$/, '') : undefined;
  let hint: ValueHint = { kind: 'none' };
  if (valueName) hint = OPTION_HINTS[option.long] ?? (option.argChoices ? { kind: 'words', words: [...option.argChoices] } : { kind: 'none' });
  const defaultValue = option.defaultValue === undefined || typeof option.defaultValue === 'boolean' ? undefined : String(option.defaultValue);
  return {
    long: option.long,
    short: option.short,
    valueName,
    description: option.description,
    hint,
    mandatory: option.mandatory,
    envVar: option.envVar,
    defaultValue,
  };
}

export function commandSpec(command: Command, path: string[] = []): CommandSpec {
  const options = command.options.map(optionSpec).filter((o): o is OptionSpec => o !== null);
  options.push(HELP_OPTION);
  const key = path.join(' ');
  const args = command.registeredArguments.map((arg) => ({
    name: arg.name(),
    required: arg.required,
    variadic: arg.variadic,
    description: arg.description,
    hint: ARG_HINTS[`${key} <${arg.name()}>`] ?? (arg.argChoices ? { kind: 'words', words: [...arg.argChoices] } : { kind: 'none' }),
  })) satisfies ArgSpec[];
  return {
    path,
    name: command.name(),
    description: command.description(),
    options,
    args,
    subcommands: command.commands.filter((c) => !(c as unknown as { _hidden?: boolean })._hidden).map((c) => commandSpec(c, [...path, c.name()])),
  };
}

/** Every command of the tree, depth first, the program first. */
export function allCommands(root: CommandSpec): CommandSpec[] {
  return [root, ...root.subcommands.flatMap(allCommands)];
}

/** How an option is written in help and the man page: `-f, --follow`, `--url <url>`. */
export function optionSynopsis(option: OptionSpec): string {
  const names = option.short ? `${option.short}, ${option.long}` : option.long;
  return option.valueName ? `${names} <${option.valueName}>` : names;
}

export function argSynopsis(arg: ArgSpec): string {
  const name = `${arg.name}${arg.variadic ? '...' : ''}`;
  return arg.required ? `<${name}>` : `[${name}]`;
}
