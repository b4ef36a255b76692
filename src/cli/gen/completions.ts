// Shell completion scripts for bash, zsh and fish, generated from the command tree. They are
// static (no call back into panelctl while completing), so completing is instant and works
// without a daemon: commands, flags, flag values (event names, roles, files) and arguments.
import { allCommands, type CommandSpec, type OptionSpec, type ValueHint } from './tree.js';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

const HEADER = 'generated from the command tree by `npm run gen:docs` (panelctl completion SHELL prints it); do not edit';

/** Every option a command accepts: its own and the program's (global options work at any level). */
function optionsOf(root: CommandSpec, command: CommandSpec): OptionSpec[] {
  if (command === root) return command.options;
  const own = new Set(command.options.map((o) => o.long));
  return [...command.options, ...root.options.filter((o) => !own.has(o.long))];
}

function key(command: CommandSpec): string {
  return command.path.join(' ');
}

/** Single-quoted for sh-like shells. */
function sq(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

function firstLine(text: string): string {
  return text.split('\n')[0].trim();
}

function hintWords(hint: ValueHint): string[] {
  return hint.kind === 'words' || hint.kind === 'list' ? hint.words : [];
}

/** compgen -W expands its word list, so a literal `*` is escaped. */
function bashWords(hint: ValueHint): string {
  return hintWords(hint)
    .map((w) => w.replace(/[*?[\]]/g, '\\$&'))
    .join(' ');
}

// ─── bash ────────────────────────────────────────────────────────────────────────────────

export function bashCompletion(root: CommandSpec): string {
  const commands = allCommands(root);
  const subs = commands.map((c) => `    ${sq(key(c))}) echo ${sq(c.subcommands.map((s) => s.name).join(' '))} ;;`);
  const opts = commands.map((c) => `    ${sq(key(c))}) echo ${sq(optionsOf(root, c).flatMap((o) => (o.short ? [o.short, o.long] : [o.long])).join(' '))} ;;`);
  const valueOpts = commands.map(
    (c) =>
      `    ${sq(key(c))}) echo ${sq(
        optionsOf(root, c)
          .filter((o) => o.valueName)
          .flatMap((o) => (o.short ? [o.short, o.long] : [o.long]))
          .join(' '),
      )} ;;`,
  );
  const optionValues: string[] = [];
  for (const c of commands) {
    for (const o of optionsOf(root, c)) {
      if (!o.valueName || o.hint.kind === 'none') continue;
      const names = o.short ? [o.short, o.long] : [o.long];
      const pattern = names.map((n) => sq(`${key(c)}|${n}`)).join('|');
      optionValues.push(`    ${pattern}) _panelctl_reply ${o.hint.kind} ${sq(bashWords(o.hint))} ;;`);
    }
  }
  const argValues: string[] = [];
  for (const c of commands) {
    c.args.forEach((a, index) => {
      if (a.hint.kind === 'none') return;
      argValues.push(`    ${sq(`${key(c)}|${index}`)}) _panelctl_reply ${a.hint.kind} ${sq(bashWords(a.hint))} ;;`);
    });
  }
  return `# bash completion for panelctl
# ${HEADER}.
# Install (the bash-completion package loads it from there on first use of panelctl):
#   mkdir -p ~/.local/share/bash-completion/completions && panelctl completion bash > ~/.local/share/bash-completion/completions/panelctl
# Without that package: source <(panelctl completion bash) in ~/.bashrc.

_panelctl_subcommands() {
  case "$1" in
${subs.join('\n')}
  esac
}

_panelctl_options() {
  case "$1" in
${opts.join('\n')}
  esac
}

_panelctl_value_options() {
  case "$1" in
${valueOpts.join('\n')}
  esac
}

# _panelctl_reply KIND WORDS: fills COMPREPLY for the current word (read line by line: no globbing).
_panelctl_reply() {
  local kind="$1" words="$2" cur="\${COMP_WORDS[COMP_CWORD]}" prefix="" line
  case "$kind" in
    file) while IFS= read -r line; do COMPREPLY+=("$line"); done < <(compgen -f -- "$cur") ;;
    dir) while IFS= read -r line; do COMPREPLY+=("$line"); done < <(compgen -d -- "$cur") ;;
    list)
      if [[ "$cur" == *,* ]]; then prefix="\${cur%,*},"; cur="\${cur##*,}"; fi
      while IFS= read -r line; do COMPREPLY+=("$prefix$line"); done < <(compgen -W "$words" -- "$cur")
      compopt -o nospace 2>/dev/null
      ;;
    *) while IFS= read -r line; do COMPREPLY+=("$line"); done < <(compgen -W "$words" -- "$cur") ;;
  esac
}

_panelctl_option_value() {
  case "$1|$2" in
${optionValues.join('\n')}
    *) return 1 ;;
  esac
}

_panelctl_arg_value() {
  case "$1|$2" in
${argValues.join('\n')}
    *) return 1 ;;
  esac
}

_panelctl() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="" path="" word sub npos=0 skip=0 i
  COMPREPLY=()
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="\${COMP_WORDS[i]}"
    if ((skip)); then skip=0; continue; fi
    case "$word" in
      --*=*) continue ;;
      -*)
        if [[ " $(_panelctl_value_options "$path") " == *" $word "* ]]; then skip=1; prev="$word"; fi
        continue ;;
    esac
    if ((npos == 0)) && [[ " $(_panelctl_subcommands "$path") " == *" $word "* ]]; then
      path="\${path:+$path }$word"
    else
      npos=$((npos + 1))
    fi
  done
  if ((skip)); then
    _panelctl_option_value "$path" "$prev" && return 0
    return 0
  fi
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$(_panelctl_options "$path")" -- "$cur"))
    return 0
  fi
  sub="$(_panelctl_subcommands "$path")"
  if [[ -n "$sub" ]] && ((npos == 0)); then
    COMPREPLY=($(compgen -W "$sub" -- "$cur"))
    return 0
  fi
  _panelctl_arg_value "$path" "$npos" && return 0
  return 0
}

complete -F _panelctl panelctl
`;
}

// ─── zsh ─────────────────────────────────────────────────────────────────────────────────

/** `name:description` items for _describe (colons in names and descriptions escaped). */
function describeItem(name: string, description: string): string {
  return sq(`${name.replace(/:/g, '\\:')}:${firstLine(description).replace(/:/g, '\\:')}`);
}

export function zshCompletion(root: CommandSpec): string {
  const commands = allCommands(root);
  const subs = commands
    .filter((c) => c.subcommands.length)
    .map((c) => `    ${sq(key(c))}) items=(${c.subcommands.map((s) => describeItem(s.name, s.description)).join(' ')}) ;;`);
  const opts = commands.map((c) => {
    const items = optionsOf(root, c).flatMap((o) => {
      const names = o.short ? [o.short, o.long] : [o.long];
      return names.map((n) => describeItem(n, o.description));
    });
    return `    ${sq(key(c))}) items=(${items.join(' ')}) ;;`;
  });
  const valueOpts = commands.map(
    (c) =>
      `    ${sq(key(c))}) print -r -- ${sq(
        optionsOf(root, c)
          .filter((o) => o.valueName)
          .flatMap((o) => (o.short ? [o.short, o.long] : [o.long]))
          .join(' '),
      )} ;;`,
  );
  const optionValues: string[] = [];
  for (const c of commands) {
    for (const o of optionsOf(root, c)) {
      if (!o.valueName || o.hint.kind === 'none') continue;
      const names = o.short ? [o.short, o.long] : [o.long];
      const pattern = names.map((n) => sq(`${key(c)}|${n}`)).join('|');
      optionValues.push(`    ${pattern}) _panelctl_values ${o.hint.kind} ${sq(hintWords(o.hint).join(' '))} ;;`);
    }
  }
  const argValues: string[] = [];
  for (const c of commands) {
    c.args.forEach((a, index) => {
      if (a.hint.kind === 'none') return;
      argValues.push(`    ${sq(`${key(c)}|${index}`)}) _panelctl_values ${a.hint.kind} ${sq(hintWords(a.hint).join(' '))} ;;`);
    });
  }
  return `#compdef panelctl
# zsh completion for panelctl
# ${HEADER}.
# Install: mkdir -p ~/.zfunc && panelctl completion zsh > ~/.zfunc/_panelctl
# and in ~/.zshrc, before compinit: fpath=(~/.zfunc $fpath)

_panelctl_subcommands() {
  local -a items
  case "$1" in
${subs.join('\n')}
    *) return 1 ;;
  esac
  _describe -t commands 'panelctl command' items
}

_panelctl_options() {
  local -a items
  case "$1" in
${opts.join('\n')}
  esac
  _describe -t options 'option' items
}

_panelctl_value_options() {
  case "$1" in
${valueOpts.join('\n')}
  esac
}

_panelctl_has_subcommands() {
  case "$1" in
${commands
  .filter((c) => c.subcommands.length)
  .map((c) => `    ${sq(key(c))}) print -r -- ${sq(c.subcommands.map((s) => s.name).join(' '))} ;;`)
  .join('\n')}
  esac
}

# _panelctl_values KIND WORDS
_panelctl_values() {
  local kind="$1"
  local -a words
  words=(\${=2})
  case "$kind" in
    file) _files ;;
    dir) _files -/ ;;
    list) _sequence compadd - -a words ;;
    *) compadd -a words ;;
  esac
}

_panelctl_option_value() {
  case "$1|$2" in
${optionValues.join('\n')}
    *) return 1 ;;
  esac
}

_panelctl_arg_value() {
  case "$1|$2" in
${argValues.join('\n')}
    *) return 1 ;;
  esac
}

_panelctl() {
  local cmdpath="" word prev="" subs
  local -i i npos=0 skip=0
  for ((i = 2; i < CURRENT; i++)); do
    word="\${words[i]}"
    if ((skip)); then skip=0; continue; fi
    case "$word" in
      --*=*) continue ;;
      -*)
        if [[ " $(_panelctl_value_options "$cmdpath") " == *" $word "* ]]; then skip=1; prev="$word"; fi
        continue ;;
    esac
    subs="$(_panelctl_has_subcommands "$cmdpath")"
    if ((npos == 0)) && [[ " $subs " == *" $word "* ]]; then
      cmdpath="\${cmdpath:+$cmdpath }$word"
    else
      npos=$((npos + 1))
    fi
  done
  if ((skip)); then
    _panelctl_option_value "$cmdpath" "$prev"
    return
  fi
  if [[ "\${words[CURRENT]}" == -* ]]; then
    _panelctl_options "$cmdpath"
    return
  fi
  if ((npos == 0)) && [[ -n "$(_panelctl_has_subcommands "$cmdpath")" ]]; then
    _panelctl_subcommands "$cmdpath"
    return
  fi
  _panelctl_arg_value "$cmdpath" "$npos"
}

if [[ "\${funcstack[1]}" == _panelctl ]]; then
  _panelctl "$@"
else
  compdef _panelctl panelctl
fi
`;
}

// ─── fish ────────────────────────────────────────────────────────────────────────────────

/** Single-quoted for fish (where \\ and \' are the only escapes). */
function fq(text: string): string {
  return `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

export function fishCompletion(root: CommandSpec): string {
  const commands = allCommands(root);
  const lines: string[] = [];
  const subPairs = commands.flatMap((c) => c.subcommands.map((s) => fq(`${key(c)}|${s.name}`)));
  const valuePairs = commands.flatMap((c) =>
    optionsOf(root, c)
      .filter((o) => o.valueName)
      .flatMap((o) => (o.short ? [o.short, o.long] : [o.long]).map((n) => fq(`${key(c)}|${n}`))),
  );
  for (const c of commands) {
    const at = fq(key(c));
    for (const s of c.subcommands) {
      lines.push(`complete -c panelctl -n "__panelctl_at ${at} 0" -f -a ${fq(s.name)} -d ${fq(firstLine(s.description))}`);
    }
    // Global options are added once, without a condition, below.
    if (c !== root) for (const o of c.options.filter((o) => o.long !== '--help')) lines.push(fishOption(o, `__panelctl_at ${at}`));
    c.args.forEach((a, index) => {
      if (a.hint.kind === 'none') return;
      lines.push(`complete -c panelctl -n "__panelctl_at ${at} ${index}" ${fishValues(a.hint)}`);
    });
  }
  const globals = root.options.map((o) => fishOption(o, null));
  return `# fish completion for panelctl
# ${HEADER}.
# Install: mkdir -p ~/.config/fish/completions && panelctl completion fish > ~/.config/fish/completions/panelctl.fish

set -g __panelctl_subs ${subPairs.join(' ')}
set -g __panelctl_value_opts ${valuePairs.join(' ')}

# Prints the command path (e.g. "webhooks create") and the number of positional arguments after it.
function __panelctl_state
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l cmdpath ''
    set -l npos 0
    set -l skip 0
    for word in $tokens
        if test $skip -eq 1
            set skip 0
            continue
        end
        switch $word
            case '--*=*'
                continue
            case '-*'
                if contains -- "$cmdpath|$word" $__panelctl_value_opts
                    set skip 1
                end
                continue
        end
        if test $npos -eq 0; and contains -- "$cmdpath|$word" $__panelctl_subs
            set cmdpath (string trim -- "$cmdpath $word")
        else
            set npos (math $npos + 1)
        end
    end
    echo $cmdpath
    echo $npos
end

# __panelctl_at PATH [NPOS]: true when completing right after PATH (with NPOS positional arguments).
function __panelctl_at
    set -l state (__panelctl_state)
    test "$state[1]" = "$argv[1]"; or return 1
    if set -q argv[2]
        test "$state[2]" = "$argv[2]"; or return 1
    end
    return 0
end

# Completes the last item of a comma-separated list of event names.
function __panelctl_list
    set -l token (commandline -ct)
    set -l prefix (string replace -r '[^,]*$' '' -- $token)
    for word in $argv
        printf '%s%s\\n' $prefix $word
    end
end

complete -c panelctl -f
${globals.join('\n')}
${lines.join('\n')}
`;
}

function fishValues(hint: ValueHint): string {
  switch (hint.kind) {
    case 'file':
      return '-r -F';
    case 'dir':
      return `-r -f -a '(__fish_complete_directories)'`;
    case 'list':
      return `-x -a "(__panelctl_list ${hint.words.map((w) => w.replace(/[*]/g, '\\*')).join(' ')})"`;
    case 'words':
      return `-x -a ${fq(hint.words.join(' '))}`;
    default:
      return '-r';
  }
}

function fishOption(o: OptionSpec, condition: string | null): string {
  const parts = ['complete -c panelctl'];
  if (condition) parts.push(`-n ${fq(condition)}`);
  if (o.short) parts.push(`-s ${o.short.replace(/^-/, '')}`);
  parts.push(`-l ${o.long.replace(/^--/, '')}`);
  if (o.valueName) parts.push(fishValues(o.hint));
  parts.push(`-d ${fq(firstLine(o.description))}`);
  return parts.join(' ');
}

export function completionScript(root: CommandSpec, shell: Shell): string {
  if (shell === 'bash') return bashCompletion(root);
  if (shell === 'zsh') return zshCompletion(root);
  return fishCompletion(root);
}
