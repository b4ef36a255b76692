// `panelctl completion bash|zsh|fish`: prints the completion script generated from the
// command tree (the same text as the checked-in completions/ files).
import { Argument, Command } from 'commander';
import type { Context } from '../context.js';

const SHELLS = ['bash', 'zsh', 'fish'] as const;

export function completionCommand(ctx: Context): Command {
  return new Command('completion')
    .description('print the shell completion script for bash, zsh or fish')
    .addArgument(new Argument('<shell>', 'the shell to complete for').choices(SHELLS))
    .addHelpText(
      'after',
      `
Install:
  bash  panelctl completion bash > ~/.local/share/bash-completion/completions/panelctl
  zsh   panelctl completion zsh > "\${fpath[1]}/_panelctl"
  fish  panelctl completion fish > ~/.config/fish/completions/panelctl.fish`,
    )
    .action(async (shell: (typeof SHELLS)[number]) => completionRun(ctx, shell));
}

export async function completionRun(ctx: Context, shell: (typeof SHELLS)[number]): Promise<void> {
  const { commandSpec } = await import('../gen/tree.js');
  const { completionScript } = await import('../gen/completions.js');
  // The running program holds only this command: completions need the whole tree.
  const { buildProgram } = await import('../program.js');
  const { program } = await buildProgram({ io: ctx.io });
  ctx.io.stdout.write(completionScript(commandSpec(program), shell));
}
