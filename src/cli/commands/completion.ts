// `panelctl completion bash|zsh|fish`: prints the completion script generated from the
// command tree (the same text as the checked-in completions/ files).
import { Argument, Command } from 'commander';
import type { Context } from '../context.js';

const SHELLS = ['bash', 'zsh', 'fish'] as const;

/**
 * How to install each script, as lines that work pasted into a fresh account: the directories
 * are made first, and none needs root. bash: the bash-completion package (installed by most
 * distributions) loads a script from that directory when `panelctl` is first completed; zsh:
 * the directory must be on $fpath before compinit runs.
 */
export const INSTALL_LINES: Record<(typeof SHELLS)[number], string[]> = {
  bash: ['mkdir -p ~/.local/share/bash-completion/completions && panelctl completion bash > ~/.local/share/bash-completion/completions/panelctl'],
  zsh: ['mkdir -p ~/.zfunc && panelctl completion zsh > ~/.zfunc/_panelctl', "# and in ~/.zshrc, before compinit: fpath=(~/.zfunc $fpath)"],
  fish: ['mkdir -p ~/.config/fish/completions && panelctl completion fish > ~/.config/fish/completions/panelctl.fish'],
};

const INSTALL_HELP = [
  'Install (no root needed; open a new shell afterwards):',
  ...SHELLS.flatMap((shell) => INSTALL_LINES[shell].map((line, i) => `  ${i === 0 ? shell.padEnd(5) : '     '} ${line}`)),
  '  bash loads it through the bash-completion package (bash-completion on Debian, Ubuntu, Fedora, Arch);',
  '  without that package, add to ~/.bashrc: source <(panelctl completion bash)',
].join('\n');

export function completionCommand(ctx: Context): Command {
  return new Command('completion')
    .description('print the shell completion script for bash, zsh or fish')
    .addArgument(new Argument('<shell>', 'the shell to complete for').choices(SHELLS))
    .addHelpText('after', `\n${INSTALL_HELP}`)
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
