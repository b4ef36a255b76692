# bash completion for panelctl
# generated from the command tree by `npm run gen:docs` (panelctl completion SHELL prints it); do not edit.
# Install (the bash-completion package loads it from there on first use of panelctl):
#   mkdir -p ~/.local/share/bash-completion/completions && panelctl completion bash > ~/.local/share/bash-completion/completions/panelctl
# Without that package: source <(panelctl completion bash) in ~/.bashrc.

_panelctl_subcommands() {
  case "$1" in
    '') echo 'init daemon login logout whoami keys webhooks listen events sites subscriptions users admin store settings 2fa watch completion' ;;
    'init') echo '' ;;
    'daemon') echo 'start stop status logs install-service' ;;
    'daemon start') echo '' ;;
    'daemon stop') echo '' ;;
    'daemon status') echo '' ;;
    'daemon logs') echo '' ;;
    'daemon install-service') echo '' ;;
    'login') echo '' ;;
    'logout') echo '' ;;
    'whoami') echo '' ;;
    'keys') echo 'create list delete' ;;
    'keys create') echo '' ;;
    'keys list') echo '' ;;
    'keys delete') echo '' ;;
    'webhooks') echo 'create list show update enable disable delete test deliveries redeliver recover rotate-secret pause resume' ;;
    'webhooks create') echo '' ;;
    'webhooks list') echo '' ;;
    'webhooks show') echo '' ;;
    'webhooks update') echo '' ;;
    'webhooks enable') echo '' ;;
    'webhooks disable') echo '' ;;
    'webhooks delete') echo '' ;;
    'webhooks test') echo '' ;;
    'webhooks deliveries') echo '' ;;
    'webhooks redeliver') echo '' ;;
    'webhooks recover') echo '' ;;
    'webhooks rotate-secret') echo '' ;;
    'webhooks pause') echo '' ;;
    'webhooks resume') echo '' ;;
    'listen') echo '' ;;
    'events') echo 'types emit' ;;
    'events types') echo '' ;;
    'events emit') echo '' ;;
    'sites') echo 'list create delete' ;;
    'sites list') echo '' ;;
    'sites create') echo '' ;;
    'sites delete') echo '' ;;
    'subscriptions') echo 'list create suspend' ;;
    'subscriptions list') echo '' ;;
    'subscriptions create') echo '' ;;
    'subscriptions suspend') echo '' ;;
    'users') echo 'list create delete' ;;
    'users list') echo '' ;;
    'users create') echo '' ;;
    'users delete') echo '' ;;
    'admin') echo 'reset-password unlock' ;;
    'admin reset-password') echo '' ;;
    'admin unlock') echo '' ;;
    'store') echo 'migrate' ;;
    'store migrate') echo '' ;;
    'settings') echo 'get set' ;;
    'settings get') echo '' ;;
    'settings set') echo '' ;;
    '2fa') echo 'setup enable disable' ;;
    '2fa setup') echo '' ;;
    '2fa enable') echo '' ;;
    '2fa disable') echo '' ;;
    'watch') echo '' ;;
    'completion') echo '' ;;
  esac
}

_panelctl_options() {
  case "$1" in
    '') echo '-V --version --url --token --ca --data-dir --json --no-color -h --help' ;;
    'init') echo '--email --name --password-stdin --database-url -h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'daemon') echo '-h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'daemon start') echo '--foreground --host --port --no-tls --tls-cert --tls-key --allow-private-webhooks --database-url --log-level --log-file --log-max-size --log-keep --metrics-port --metrics-host -h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'daemon stop') echo '--timeout -h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'daemon status') echo '--wait-ready -h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'daemon logs') echo '-f --follow --level -n --lines -h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'daemon install-service') echo '--user --print --database-url --host --port --no-tls --tls-cert --tls-key --allow-private-webhooks --log-level --metrics-port --metrics-host -h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'login') echo '--email --password-stdin --totp -h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'logout') echo '-h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'whoami') echo '-h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'keys') echo '-h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'keys create') echo '--expires-at --expires-in -h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'keys list') echo '-n --limit -h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'keys delete') echo '-h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'webhooks') echo '-h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'webhooks create') echo '--url --events --secret --secret-stdin --generate-secret --inactive --paused --signature --header --retry-schedule --max-in-flight --rate-limit -h --help -V --version --token --ca --data-dir --json --no-color' ;;
    'webhooks list') echo '-n --limit -h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'webhooks show') echo '-h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'webhooks update') echo '--url --events --active --inactive --secret-stdin --generate-secret --signature --header --retry-schedule --max-in-flight --rate-limit -h --help -V --version --token --ca --data-dir --json --no-color' ;;
    'webhooks enable') echo '-h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'webhooks disable') echo '-h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'webhooks delete') echo '-h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'webhooks test') echo '--message --no-wait -h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'webhooks deliveries') echo '-f --follow --failed --event --since -n --limit -h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'webhooks redeliver') echo '--no-wait -h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'webhooks recover') echo '--since --until -h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'webhooks rotate-secret') echo '--secret-stdin --generate-secret --overlap -h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'webhooks pause') echo '-h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'webhooks resume') echo '-h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'listen') echo '--events --forward-to --print-secret -h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'events') echo '-h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'events types') echo '-h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'events emit') echo '--owner --data -h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'sites') echo '-h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'sites list') echo '--subscription -n --limit -h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'sites create') echo '--subscription -h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'sites delete') echo '-h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'subscriptions') echo '-h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'subscriptions list') echo '-n --limit -h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'subscriptions create') echo '--customer --domain --default -h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'subscriptions suspend') echo '-h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'users') echo '-h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'users list') echo '-n --limit -h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'users create') echo '--email --name --role --password-stdin -h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'users delete') echo '-h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'admin') echo '-h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'admin reset-password') echo '--email --password-stdin --database-url -h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'admin unlock') echo '--ip --email --database-url -h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'store') echo '-h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'store migrate') echo '--to -h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'settings') echo '-h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'settings get') echo '-h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'settings set') echo '-h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    '2fa') echo '-h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    '2fa setup') echo '-h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    '2fa enable') echo '-h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    '2fa disable') echo '-h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'watch') echo '--endpoint --failed -h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
    'completion') echo '-h --help -V --version --url --token --ca --data-dir --json --no-color' ;;
  esac
}

_panelctl_value_options() {
  case "$1" in
    '') echo '--url --token --ca --data-dir' ;;
    'init') echo '--email --name --database-url --url --token --ca --data-dir' ;;
    'daemon') echo '--url --token --ca --data-dir' ;;
    'daemon start') echo '--host --port --tls-cert --tls-key --database-url --log-level --log-file --log-max-size --log-keep --metrics-port --metrics-host --url --token --ca --data-dir' ;;
    'daemon stop') echo '--timeout --url --token --ca --data-dir' ;;
    'daemon status') echo '--wait-ready --url --token --ca --data-dir' ;;
    'daemon logs') echo '--level -n --lines --url --token --ca --data-dir' ;;
    'daemon install-service') echo '--database-url --host --port --tls-cert --tls-key --log-level --metrics-port --metrics-host --url --token --ca --data-dir' ;;
    'login') echo '--email --totp --url --token --ca --data-dir' ;;
    'logout') echo '--url --token --ca --data-dir' ;;
    'whoami') echo '--url --token --ca --data-dir' ;;
    'keys') echo '--url --token --ca --data-dir' ;;
    'keys create') echo '--expires-at --expires-in --url --token --ca --data-dir' ;;
    'keys list') echo '-n --limit --url --token --ca --data-dir' ;;
    'keys delete') echo '--url --token --ca --data-dir' ;;
    'webhooks') echo '--url --token --ca --data-dir' ;;
    'webhooks create') echo '--url --events --secret --signature --header --retry-schedule --max-in-flight --rate-limit --token --ca --data-dir' ;;
    'webhooks list') echo '-n --limit --url --token --ca --data-dir' ;;
    'webhooks show') echo '--url --token --ca --data-dir' ;;
    'webhooks update') echo '--url --events --signature --header --retry-schedule --max-in-flight --rate-limit --token --ca --data-dir' ;;
    'webhooks enable') echo '--url --token --ca --data-dir' ;;
    'webhooks disable') echo '--url --token --ca --data-dir' ;;
    'webhooks delete') echo '--url --token --ca --data-dir' ;;
    'webhooks test') echo '--message --url --token --ca --data-dir' ;;
    'webhooks deliveries') echo '--event --since -n --limit --url --token --ca --data-dir' ;;
    'webhooks redeliver') echo '--url --token --ca --data-dir' ;;
    'webhooks recover') echo '--since --until --url --token --ca --data-dir' ;;
    'webhooks rotate-secret') echo '--overlap --url --token --ca --data-dir' ;;
    'webhooks pause') echo '--url --token --ca --data-dir' ;;
    'webhooks resume') echo '--url --token --ca --data-dir' ;;
    'listen') echo '--events --forward-to --url --token --ca --data-dir' ;;
    'events') echo '--url --token --ca --data-dir' ;;
    'events types') echo '--url --token --ca --data-dir' ;;
    'events emit') echo '--owner --data --url --token --ca --data-dir' ;;
    'sites') echo '--url --token --ca --data-dir' ;;
    'sites list') echo '--subscription -n --limit --url --token --ca --data-dir' ;;
    'sites create') echo '--subscription --url --token --ca --data-dir' ;;
    'sites delete') echo '--url --token --ca --data-dir' ;;
    'subscriptions') echo '--url --token --ca --data-dir' ;;
    'subscriptions list') echo '-n --limit --url --token --ca --data-dir' ;;
    'subscriptions create') echo '--customer --domain --url --token --ca --data-dir' ;;
    'subscriptions suspend') echo '--url --token --ca --data-dir' ;;
    'users') echo '--url --token --ca --data-dir' ;;
    'users list') echo '-n --limit --url --token --ca --data-dir' ;;
    'users create') echo '--email --name --role --url --token --ca --data-dir' ;;
    'users delete') echo '--url --token --ca --data-dir' ;;
    'admin') echo '--url --token --ca --data-dir' ;;
    'admin reset-password') echo '--email --database-url --url --token --ca --data-dir' ;;
    'admin unlock') echo '--ip --email --database-url --url --token --ca --data-dir' ;;
    'store') echo '--url --token --ca --data-dir' ;;
    'store migrate') echo '--to --url --token --ca --data-dir' ;;
    'settings') echo '--url --token --ca --data-dir' ;;
    'settings get') echo '--url --token --ca --data-dir' ;;
    'settings set') echo '--url --token --ca --data-dir' ;;
    '2fa') echo '--url --token --ca --data-dir' ;;
    '2fa setup') echo '--url --token --ca --data-dir' ;;
    '2fa enable') echo '--url --token --ca --data-dir' ;;
    '2fa disable') echo '--url --token --ca --data-dir' ;;
    'watch') echo '--endpoint --url --token --ca --data-dir' ;;
    'completion') echo '--url --token --ca --data-dir' ;;
  esac
}

# _panelctl_reply KIND WORDS: fills COMPREPLY for the current word (read line by line: no globbing).
_panelctl_reply() {
  local kind="$1" words="$2" cur="${COMP_WORDS[COMP_CWORD]}" prefix="" line
  case "$kind" in
    file) while IFS= read -r line; do COMPREPLY+=("$line"); done < <(compgen -f -- "$cur") ;;
    dir) while IFS= read -r line; do COMPREPLY+=("$line"); done < <(compgen -d -- "$cur") ;;
    list)
      if [[ "$cur" == *,* ]]; then prefix="${cur%,*},"; cur="${cur##*,}"; fi
      while IFS= read -r line; do COMPREPLY+=("$prefix$line"); done < <(compgen -W "$words" -- "$cur")
      compopt -o nospace 2>/dev/null
      ;;
    *) while IFS= read -r line; do COMPREPLY+=("$line"); done < <(compgen -W "$words" -- "$cur") ;;
  esac
}

_panelctl_option_value() {
  case "$1|$2" in
    '|--ca') _panelctl_reply file '' ;;
    '|--data-dir') _panelctl_reply dir '' ;;
    'init|--ca') _panelctl_reply file '' ;;
    'init|--data-dir') _panelctl_reply dir '' ;;
    'daemon|--ca') _panelctl_reply file '' ;;
    'daemon|--data-dir') _panelctl_reply dir '' ;;
    'daemon start|--tls-cert') _panelctl_reply file '' ;;
    'daemon start|--tls-key') _panelctl_reply file '' ;;
    'daemon start|--log-level') _panelctl_reply words 'fatal error warn info debug' ;;
    'daemon start|--ca') _panelctl_reply file '' ;;
    'daemon start|--data-dir') _panelctl_reply dir '' ;;
    'daemon stop|--ca') _panelctl_reply file '' ;;
    'daemon stop|--data-dir') _panelctl_reply dir '' ;;
    'daemon status|--ca') _panelctl_reply file '' ;;
    'daemon status|--data-dir') _panelctl_reply dir '' ;;
    'daemon logs|--level') _panelctl_reply words 'trace debug info warn error fatal' ;;
    'daemon logs|--ca') _panelctl_reply file '' ;;
    'daemon logs|--data-dir') _panelctl_reply dir '' ;;
    'daemon install-service|--tls-cert') _panelctl_reply file '' ;;
    'daemon install-service|--tls-key') _panelctl_reply file '' ;;
    'daemon install-service|--log-level') _panelctl_reply words 'fatal error warn info debug' ;;
    'daemon install-service|--ca') _panelctl_reply file '' ;;
    'daemon install-service|--data-dir') _panelctl_reply dir '' ;;
    'login|--ca') _panelctl_reply file '' ;;
    'login|--data-dir') _panelctl_reply dir '' ;;
    'logout|--ca') _panelctl_reply file '' ;;
    'logout|--data-dir') _panelctl_reply dir '' ;;
    'whoami|--ca') _panelctl_reply file '' ;;
    'whoami|--data-dir') _panelctl_reply dir '' ;;
    'keys|--ca') _panelctl_reply file '' ;;
    'keys|--data-dir') _panelctl_reply dir '' ;;
    'keys create|--ca') _panelctl_reply file '' ;;
    'keys create|--data-dir') _panelctl_reply dir '' ;;
    'keys list|--ca') _panelctl_reply file '' ;;
    'keys list|--data-dir') _panelctl_reply dir '' ;;
    'keys delete|--ca') _panelctl_reply file '' ;;
    'keys delete|--data-dir') _panelctl_reply dir '' ;;
    'webhooks|--ca') _panelctl_reply file '' ;;
    'webhooks|--data-dir') _panelctl_reply dir '' ;;
    'webhooks create|--events') _panelctl_reply list '\* site.created site.deleted domain.created domain.deleted database.created database.deleted email.created ftp.created backup.completed subscription.created subscription.suspended webhook.test delivery.failed endpoint.disabled' ;;
    'webhooks create|--signature') _panelctl_reply words 'seed standard-webhooks' ;;
    'webhooks create|--ca') _panelctl_reply file '' ;;
    'webhooks create|--data-dir') _panelctl_reply dir '' ;;
    'webhooks list|--ca') _panelctl_reply file '' ;;
    'webhooks list|--data-dir') _panelctl_reply dir '' ;;
    'webhooks show|--ca') _panelctl_reply file '' ;;
    'webhooks show|--data-dir') _panelctl_reply dir '' ;;
    'webhooks update|--events') _panelctl_reply list '\* site.created site.deleted domain.created domain.deleted database.created database.deleted email.created ftp.created backup.completed subscription.created subscription.suspended webhook.test delivery.failed endpoint.disabled' ;;
    'webhooks update|--signature') _panelctl_reply words 'seed standard-webhooks' ;;
    'webhooks update|--ca') _panelctl_reply file '' ;;
    'webhooks update|--data-dir') _panelctl_reply dir '' ;;
    'webhooks enable|--ca') _panelctl_reply file '' ;;
    'webhooks enable|--data-dir') _panelctl_reply dir '' ;;
    'webhooks disable|--ca') _panelctl_reply file '' ;;
    'webhooks disable|--data-dir') _panelctl_reply dir '' ;;
    'webhooks delete|--ca') _panelctl_reply file '' ;;
    'webhooks delete|--data-dir') _panelctl_reply dir '' ;;
    'webhooks test|--ca') _panelctl_reply file '' ;;
    'webhooks test|--data-dir') _panelctl_reply dir '' ;;
    'webhooks deliveries|--ca') _panelctl_reply file '' ;;
    'webhooks deliveries|--data-dir') _panelctl_reply dir '' ;;
    'webhooks redeliver|--ca') _panelctl_reply file '' ;;
    'webhooks redeliver|--data-dir') _panelctl_reply dir '' ;;
    'webhooks recover|--ca') _panelctl_reply file '' ;;
    'webhooks recover|--data-dir') _panelctl_reply dir '' ;;
    'webhooks rotate-secret|--ca') _panelctl_reply file '' ;;
    'webhooks rotate-secret|--data-dir') _panelctl_reply dir '' ;;
    'webhooks pause|--ca') _panelctl_reply file '' ;;
    'webhooks pause|--data-dir') _panelctl_reply dir '' ;;
    'webhooks resume|--ca') _panelctl_reply file '' ;;
    'webhooks resume|--data-dir') _panelctl_reply dir '' ;;
    'listen|--events') _panelctl_reply list '\* site.created site.deleted domain.created domain.deleted database.created database.deleted email.created ftp.created backup.completed subscription.created subscription.suspended webhook.test delivery.failed endpoint.disabled' ;;
    'listen|--ca') _panelctl_reply file '' ;;
    'listen|--data-dir') _panelctl_reply dir '' ;;
    'events|--ca') _panelctl_reply file '' ;;
    'events|--data-dir') _panelctl_reply dir '' ;;
    'events types|--ca') _panelctl_reply file '' ;;
    'events types|--data-dir') _panelctl_reply dir '' ;;
    'events emit|--ca') _panelctl_reply file '' ;;
    'events emit|--data-dir') _panelctl_reply dir '' ;;
    'sites|--ca') _panelctl_reply file '' ;;
    'sites|--data-dir') _panelctl_reply dir '' ;;
    'sites list|--ca') _panelctl_reply file '' ;;
    'sites list|--data-dir') _panelctl_reply dir '' ;;
    'sites create|--ca') _panelctl_reply file '' ;;
    'sites create|--data-dir') _panelctl_reply dir '' ;;
    'sites delete|--ca') _panelctl_reply file '' ;;
    'sites delete|--data-dir') _panelctl_reply dir '' ;;
    'subscriptions|--ca') _panelctl_reply file '' ;;
    'subscriptions|--data-dir') _panelctl_reply dir '' ;;
    'subscriptions list|--ca') _panelctl_reply file '' ;;
    'subscriptions list|--data-dir') _panelctl_reply dir '' ;;
    'subscriptions create|--ca') _panelctl_reply file '' ;;
    'subscriptions create|--data-dir') _panelctl_reply dir '' ;;
    'subscriptions suspend|--ca') _panelctl_reply file '' ;;
    'subscriptions suspend|--data-dir') _panelctl_reply dir '' ;;
    'users|--ca') _panelctl_reply file '' ;;
    'users|--data-dir') _panelctl_reply dir '' ;;
    'users list|--ca') _panelctl_reply file '' ;;
    'users list|--data-dir') _panelctl_reply dir '' ;;
    'users create|--role') _panelctl_reply words 'admin customer' ;;
    'users create|--ca') _panelctl_reply file '' ;;
    'users create|--data-dir') _panelctl_reply dir '' ;;
    'users delete|--ca') _panelctl_reply file '' ;;
    'users delete|--data-dir') _panelctl_reply dir '' ;;
    'admin|--ca') _panelctl_reply file '' ;;
    'admin|--data-dir') _panelctl_reply dir '' ;;
    'admin reset-password|--ca') _panelctl_reply file '' ;;
    'admin reset-password|--data-dir') _panelctl_reply dir '' ;;
    'admin unlock|--ca') _panelctl_reply file '' ;;
    'admin unlock|--data-dir') _panelctl_reply dir '' ;;
    'store|--ca') _panelctl_reply file '' ;;
    'store|--data-dir') _panelctl_reply dir '' ;;
    'store migrate|--ca') _panelctl_reply file '' ;;
    'store migrate|--data-dir') _panelctl_reply dir '' ;;
    'settings|--ca') _panelctl_reply file '' ;;
    'settings|--data-dir') _panelctl_reply dir '' ;;
    'settings get|--ca') _panelctl_reply file '' ;;
    'settings get|--data-dir') _panelctl_reply dir '' ;;
    'settings set|--ca') _panelctl_reply file '' ;;
    'settings set|--data-dir') _panelctl_reply dir '' ;;
    '2fa|--ca') _panelctl_reply file '' ;;
    '2fa|--data-dir') _panelctl_reply dir '' ;;
    '2fa setup|--ca') _panelctl_reply file '' ;;
    '2fa setup|--data-dir') _panelctl_reply dir '' ;;
    '2fa enable|--ca') _panelctl_reply file '' ;;
    '2fa enable|--data-dir') _panelctl_reply dir '' ;;
    '2fa disable|--ca') _panelctl_reply file '' ;;
    '2fa disable|--data-dir') _panelctl_reply dir '' ;;
    'watch|--ca') _panelctl_reply file '' ;;
    'watch|--data-dir') _panelctl_reply dir '' ;;
    'completion|--ca') _panelctl_reply file '' ;;
    'completion|--data-dir') _panelctl_reply dir '' ;;
    *) return 1 ;;
  esac
}

_panelctl_arg_value() {
  case "$1|$2" in
    'events emit|0') _panelctl_reply words 'site.created site.deleted domain.created domain.deleted database.created database.deleted email.created ftp.created backup.completed subscription.created subscription.suspended webhook.test delivery.failed endpoint.disabled' ;;
    'settings get|0') _panelctl_reply words 'jwt_ttl_seconds rate_limit_mode rate_limit_login_per_minute rate_limit_reset_per_minute rate_limit_user_per_minute login_max_attempts login_lockout_minutes totp_max_failures totp_lockout_minutes webhook_allow_private_networks webhook_disable_after_failures' ;;
    'settings set|0') _panelctl_reply words 'jwt_ttl_seconds rate_limit_mode rate_limit_login_per_minute rate_limit_reset_per_minute rate_limit_user_per_minute login_max_attempts login_lockout_minutes totp_max_failures totp_lockout_minutes webhook_allow_private_networks webhook_disable_after_failures' ;;
    'completion|0') _panelctl_reply words 'bash zsh fish' ;;
    *) return 1 ;;
  esac
}

_panelctl() {
  local cur="${COMP_WORDS[COMP_CWORD]}" prev="" path="" word sub npos=0 skip=0 i
  COMPREPLY=()
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="${COMP_WORDS[i]}"
    if ((skip)); then skip=0; continue; fi
    case "$word" in
      --*=*) continue ;;
      -*)
        if [[ " $(_panelctl_value_options "$path") " == *" $word "* ]]; then skip=1; prev="$word"; fi
        continue ;;
    esac
    if ((npos == 0)) && [[ " $(_panelctl_subcommands "$path") " == *" $word "* ]]; then
      path="${path:+$path }$word"
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
