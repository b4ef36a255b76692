// A noun's command with its verbs (`panelctl keys list`). A run builds only the verb its argv
// names, with its hidden global options, when it names one: commander's objects for the other
// verbs are work for a command that is not run (start-up time is benchmarked). Help, an unknown
// or missing verb, and the generators build them all.
import { Command } from 'commander';
import type { Context } from './context.js';

type VerbFactory = (ctx: Context) => Command;

/**
 * The factory of the noun `name`: `verbs` in the order help lists them, each under its command's
 * name. Given a `verb` among them it builds that one only, else all.
 */
export function family(name: string, description: string, verbs: Readonly<Record<string, VerbFactory>>): (ctx: Context, verb?: string | null) => Command {
  return (ctx, verb) => {
    const command = new Command(name).description(description);
    for (const key of verb && Object.hasOwn(verbs, verb) ? [verb] : Object.keys(verbs)) {
      const sub = verbs[key](ctx);
      // A verb is found by its key before it is built: the two must not drift apart.
      if (sub.name() !== key) throw new Error(`panelctl ${name}: the verb ${key} builds a command named ${sub.name()}`);
      command.addCommand(sub);
    }
    return command;
  };
}
