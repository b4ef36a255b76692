// Global options (--url, --token, --json, …) may come before or after the command name. The
// program parses its options up to the command name only (positional options), so a command's
// own option of the same name wins after it (`webhooks create --url` is the webhook's URL);
// every command that runs carries hidden copies of the others.
import { Option, type Command } from 'commander';

/** Attribute names of the hidden global-option copies a command carries. */
const GLOBAL_COPIES = new WeakMap<Command, string[]>();

/**
 * Gives every command that runs an action hidden copies of the program's options it does
 * not define itself, so they may also follow the command name.
 */
export function acceptGlobalOptions(program: Command, command: Command): void {
  for (const sub of command.commands) acceptGlobalOptions(program, sub);
  if (command.commands.length > 0) return;
  const copies: string[] = [];
  const copyOptions: Option[] = [];
  for (const option of program.options) {
    if (!option.long || option.long === '--version') continue;
    if (command.options.some((own) => own.long === option.long)) continue;
    const copy = new Option(option.flags, option.description).hideHelp();
    command.addOption(copy);
    copyOptions.push(copy);
    copies.push(copy.attributeName());
  }
  GLOBAL_COPIES.set(command, copies);
  suggestHiddenCopies(command, copyOptions);
}

/**
 * Commander suggests only visible options after an unknown one (`keys list --jsn`), and the
 * copies are hidden from help; they are shown to its suggester for that one call, so a typo of
 * a global option after the command name gets the same `(Did you mean --json?)` as before it.
 */
function suggestHiddenCopies(command: Command, copies: Option[]): void {
  const target = command as unknown as { unknownOption(flag: string): void };
  const unknownOption = target.unknownOption.bind(command);
  target.unknownOption = (flag: string) => {
    for (const option of copies) option.hidden = false;
    try {
      unknownOption(flag);
    } finally {
      for (const option of copies) option.hidden = true;
    }
  };
}

/**
 * The global options in effect for the running command: the program's (given before the
 * command name, or from the environment), overridden by those given after it.
 */
export function effectiveGlobals(program: Command, command: Command | null): Record<string, unknown> {
  const values: Record<string, unknown> = { ...program.opts() };
  if (!command) return values;
  for (const name of GLOBAL_COPIES.get(command) ?? []) {
    if (command.getOptionValueSource(name) === 'cli') values[name] = command.getOptionValue(name);
  }
  return values;
}
