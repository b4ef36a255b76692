# fish completion for panelctl
# generated from the command tree by `npm run gen:docs` (panelctl completion SHELL prints it); do not edit.
# Install: mkdir -p ~/.config/fish/completions && panelctl completion fish > ~/.config/fish/completions/panelctl.fish

set -g __panelctl_subs '|init' '|daemon' '|login' '|logout' '|whoami' '|keys' '|webhooks' '|listen' '|events' '|sites' '|subscriptions' '|users' '|admin' '|store' '|settings' '|2fa' '|watch' '|completion' 'daemon|start' 'daemon|stop' 'daemon|status' 'daemon|logs' 'daemon|install-service' 'keys|create' 'keys|list' 'keys|delete' 'webhooks|create' 'webhooks|list' 'webhooks|show' 'webhooks|update' 'webhooks|enable' 'webhooks|disable' 'webhooks|delete' 'webhooks|test' 'webhooks|deliveries' 'webhooks|redeliver' 'webhooks|recover' 'webhooks|rotate-secret' 'webhooks|pause' 'webhooks|resume' 'events|types' 'events|emit' 'sites|list' 'sites|create' 'sites|delete' 'subscriptions|list' 'subscriptions|create' 'subscriptions|suspend' 'users|list' 'users|create' 'users|delete' 'admin|reset-password' 'admin|unlock' 'store|migrate' 'settings|get' 'settings|set' '2fa|setup' '2fa|enable' '2fa|disable'
set -g __panelctl_value_opts '|--url' '|--token' '|--ca' '|--data-dir' 'init|--email' 'init|--name' 'init|--database-url' 'init|--url' 'init|--token' 'init|--ca' 'init|--data-dir' 'daemon|--url' 'daemon|--token' 'daemon|--ca' 'daemon|--data-dir' 'daemon start|--host' 'daemon start|--port' 'daemon start|--tls-cert' 'daemon start|--tls-key' 'daemon start|--database-url' 'daemon start|--log-level' 'daemon start|--log-file' 'daemon start|--log-max-size' 'daemon start|--log-keep' 'daemon start|--metrics-port' 'daemon start|--metrics-host' 'daemon start|--url' 'daemon start|--token' 'daemon start|--ca' 'daemon start|--data-dir' 'daemon stop|--timeout' 'daemon stop|--url' 'daemon stop|--token' 'daemon stop|--ca' 'daemon stop|--data-dir' 'daemon status|--wait-ready' 'daemon status|--url' 'daemon status|--token' 'daemon status|--ca' 'daemon status|--data-dir' 'daemon logs|--level' 'daemon logs|-n' 'daemon logs|--lines' 'daemon logs|--url' 'daemon logs|--token' 'daemon logs|--ca' 'daemon logs|--data-dir' 'daemon install-service|--database-url' 'daemon install-service|--host' 'daemon install-service|--port' 'daemon install-service|--tls-cert' 'daemon install-service|--tls-key' 'daemon install-service|--log-level' 'daemon install-service|--metrics-port' 'daemon install-service|--metrics-host' 'daemon install-service|--url' 'daemon install-service|--token' 'daemon install-service|--ca' 'daemon install-service|--data-dir' 'login|--email' 'login|--totp' 'login|--url' 'login|--token' 'login|--ca' 'login|--data-dir' 'logout|--url' 'logout|--token' 'logout|--ca' 'logout|--data-dir' 'whoami|--url' 'whoami|--token' 'whoami|--ca' 'whoami|--data-dir' 'keys|--url' 'keys|--token' 'keys|--ca' 'keys|--data-dir' 'keys create|--expires-at' 'keys create|--expires-in' 'keys create|--url' 'keys create|--token' 'keys create|--ca' 'keys create|--data-dir' 'keys list|-n' 'keys list|--limit' 'keys list|--url' 'keys list|--token' 'keys list|--ca' 'keys list|--data-dir' 'keys delete|--url' 'keys delete|--token' 'keys delete|--ca' 'keys delete|--data-dir' 'webhooks|--url' 'webhooks|--token' 'webhooks|--ca' 'webhooks|--data-dir' 'webhooks create|--url' 'webhooks create|--events' 'webhooks create|--secret' 'webhooks create|--signature' 'webhooks create|--header' 'webhooks create|--retry-schedule' 'webhooks create|--max-in-flight' 'webhooks create|--rate-limit' 'webhooks create|--token' 'webhooks create|--ca' 'webhooks create|--data-dir' 'webhooks list|-n' 'webhooks list|--limit' 'webhooks list|--url' 'webhooks list|--token' 'webhooks list|--ca' 'webhooks list|--data-dir' 'webhooks show|--url' 'webhooks show|--token' 'webhooks show|--ca' 'webhooks show|--data-dir' 'webhooks update|--url' 'webhooks update|--events' 'webhooks update|--signature' 'webhooks update|--header' 'webhooks update|--retry-schedule' 'webhooks update|--max-in-flight' 'webhooks update|--rate-limit' 'webhooks update|--token' 'webhooks update|--ca' 'webhooks update|--data-dir' 'webhooks enable|--url' 'webhooks enable|--token' 'webhooks enable|--ca' 'webhooks enable|--data-dir' 'webhooks disable|--url' 'webhooks disable|--token' 'webhooks disable|--ca' 'webhooks disable|--data-dir' 'webhooks delete|--url' 'webhooks delete|--token' 'webhooks delete|--ca' 'webhooks delete|--data-dir' 'webhooks test|--message' 'webhooks test|--url' 'webhooks test|--token' 'webhooks test|--ca' 'webhooks test|--data-dir' 'webhooks deliveries|--event' 'webhooks deliveries|--since' 'webhooks deliveries|-n' 'webhooks deliveries|--limit' 'webhooks deliveries|--url' 'webhooks deliveries|--token' 'webhooks deliveries|--ca' 'webhooks deliveries|--data-dir' 'webhooks redeliver|--url' 'webhooks redeliver|--token' 'webhooks redeliver|--ca' 'webhooks redeliver|--data-dir' 'webhooks recover|--since' 'webhooks recover|--until' 'webhooks recover|--url' 'webhooks recover|--token' 'webhooks recover|--ca' 'webhooks recover|--data-dir' 'webhooks rotate-secret|--overlap' 'webhooks rotate-secret|--url' 'webhooks rotate-secret|--token' 'webhooks rotate-secret|--ca' 'webhooks rotate-secret|--data-dir' 'webhooks pause|--url' 'webhooks pause|--token' 'webhooks pause|--ca' 'webhooks pause|--data-dir' 'webhooks resume|--url' 'webhooks resume|--token' 'webhooks resume|--ca' 'webhooks resume|--data-dir' 'listen|--events' 'listen|--forward-to' 'listen|--url' 'listen|--token' 'listen|--ca' 'listen|--data-dir' 'events|--url' 'events|--token' 'events|--ca' 'events|--data-dir' 'events types|--url' 'events types|--token' 'events types|--ca' 'events types|--data-dir' 'events emit|--owner' 'events emit|--data' 'events emit|--url' 'events emit|--token' 'events emit|--ca' 'events emit|--data-dir' 'sites|--url' 'sites|--token' 'sites|--ca' 'sites|--data-dir' 'sites list|--subscription' 'sites list|-n' 'sites list|--limit' 'sites list|--url' 'sites list|--token' 'sites list|--ca' 'sites list|--data-dir' 'sites create|--subscription' 'sites create|--url' 'sites create|--token' 'sites create|--ca' 'sites create|--data-dir' 'sites delete|--url' 'sites delete|--token' 'sites delete|--ca' 'sites delete|--data-dir' 'subscriptions|--url' 'subscriptions|--token' 'subscriptions|--ca' 'subscriptions|--data-dir' 'subscriptions list|-n' 'subscriptions list|--limit' 'subscriptions list|--url' 'subscriptions list|--token' 'subscriptions list|--ca' 'subscriptions list|--data-dir' 'subscriptions create|--customer' 'subscriptions create|--domain' 'subscriptions create|--url' 'subscriptions create|--token' 'subscriptions create|--ca' 'subscriptions create|--data-dir' 'subscriptions suspend|--url' 'subscriptions suspend|--token' 'subscriptions suspend|--ca' 'subscriptions suspend|--data-dir' 'users|--url' 'users|--token' 'users|--ca' 'users|--data-dir' 'users list|-n' 'users list|--limit' 'users list|--url' 'users list|--token' 'users list|--ca' 'users list|--data-dir' 'users create|--email' 'users create|--name' 'users create|--role' 'users create|--url' 'users create|--token' 'users create|--ca' 'users create|--data-dir' 'users delete|--url' 'users delete|--token' 'users delete|--ca' 'users delete|--data-dir' 'admin|--url' 'admin|--token' 'admin|--ca' 'admin|--data-dir' 'admin reset-password|--email' 'admin reset-password|--database-url' 'admin reset-password|--url' 'admin reset-password|--token' 'admin reset-password|--ca' 'admin reset-password|--data-dir' 'admin unlock|--ip' 'admin unlock|--email' 'admin unlock|--database-url' 'admin unlock|--url' 'admin unlock|--token' 'admin unlock|--ca' 'admin unlock|--data-dir' 'store|--url' 'store|--token' 'store|--ca' 'store|--data-dir' 'store migrate|--to' 'store migrate|--url' 'store migrate|--token' 'store migrate|--ca' 'store migrate|--data-dir' 'settings|--url' 'settings|--token' 'settings|--ca' 'settings|--data-dir' 'settings get|--url' 'settings get|--token' 'settings get|--ca' 'settings get|--data-dir' 'settings set|--url' 'settings set|--token' 'settings set|--ca' 'settings set|--data-dir' '2fa|--url' '2fa|--token' '2fa|--ca' '2fa|--data-dir' '2fa setup|--url' '2fa setup|--token' '2fa setup|--ca' '2fa setup|--data-dir' '2fa enable|--url' '2fa enable|--token' '2fa enable|--ca' '2fa enable|--data-dir' '2fa disable|--url' '2fa disable|--token' '2fa disable|--ca' '2fa disable|--data-dir' 'watch|--endpoint' 'watch|--url' 'watch|--token' 'watch|--ca' 'watch|--data-dir' 'completion|--url' 'completion|--token' 'completion|--ca' 'completion|--data-dir'

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
        printf '%s%s\n' $prefix $word
    end
end

complete -c panelctl -f
complete -c panelctl -s V -l version -d 'output the version number'
complete -c panelctl -l url -r -d 'daemon URL (default: the stored login, else https://127.0.0.1:3443)'
complete -c panelctl -l token -r -d 'JWT or API key to authenticate with'
complete -c panelctl -l ca -r -F -d 'CA certificate to trust (default: the data directory\'s tls/cert.pem)'
complete -c panelctl -l data-dir -r -f -a '(__fish_complete_directories)' -d 'data directory'
complete -c panelctl -l json -d 'print the response\'s data as JSON on stdout, nothing else'
complete -c panelctl -l no-color -d 'no colours (also NO_COLOR)'
complete -c panelctl -s h -l help -d 'display help for command'
complete -c panelctl -n "__panelctl_at '' 0" -f -a 'init' -d 'create the data directory, TLS certificate and the first admin user'
complete -c panelctl -n "__panelctl_at '' 0" -f -a 'daemon' -d 'run and control the panelctl daemon (API and webhook dispatcher)'
complete -c panelctl -n "__panelctl_at '' 0" -f -a 'login' -d 'log in to the daemon and keep the session token for the next commands'
complete -c panelctl -n "__panelctl_at '' 0" -f -a 'logout' -d 'revoke the stored session token and forget it'
complete -c panelctl -n "__panelctl_at '' 0" -f -a 'whoami' -d 'show the account the current token belongs to'
complete -c panelctl -n "__panelctl_at '' 0" -f -a 'keys' -d 'create, list and delete API keys (requires a login session)'
complete -c panelctl -n "__panelctl_at '' 0" -f -a 'webhooks' -d 'manage webhook endpoints, send test events, read and follow delivery logs'
complete -c panelctl -n "__panelctl_at '' 0" -f -a 'listen' -d 'receive your events here while it runs, as an endpoint would (signed), and forward them to a local URL'
complete -c panelctl -n "__panelctl_at '' 0" -f -a 'events' -d 'list the event catalogue and publish events (admin)'
complete -c panelctl -n "__panelctl_at '' 0" -f -a 'sites' -d 'list, create and delete websites'
complete -c panelctl -n "__panelctl_at '' 0" -f -a 'subscriptions' -d 'list subscriptions; create and suspend them (admin)'
complete -c panelctl -n "__panelctl_at '' 0" -f -a 'users' -d 'list, create and delete user accounts (admin)'
complete -c panelctl -n "__panelctl_at '' 0" -f -a 'admin' -d 'recovery commands for the data directory\'s owner (no login needed)'
complete -c panelctl -n "__panelctl_at '' 0" -f -a 'store' -d 'move the data directory\'s store to PostgreSQL'
complete -c panelctl -n "__panelctl_at '' 0" -f -a 'settings' -d 'read and change the daemon settings (admin)'
complete -c panelctl -n "__panelctl_at '' 0" -f -a '2fa' -d 'set up, enable and disable two-factor authentication (TOTP) for your account'
complete -c panelctl -n "__panelctl_at '' 0" -f -a 'watch' -d 'watch webhook deliveries live in a full-screen terminal view (test, redeliver, filter)'
complete -c panelctl -n "__panelctl_at '' 0" -f -a 'completion' -d 'print the shell completion script for bash, zsh or fish'
complete -c panelctl -n '__panelctl_at \'init\'' -l email -r -d 'admin email'
complete -c panelctl -n '__panelctl_at \'init\'' -l name -r -d 'admin display name'
complete -c panelctl -n '__panelctl_at \'init\'' -l password-stdin -d 'read the admin password from standard input'
complete -c panelctl -n '__panelctl_at \'init\'' -l database-url -r -d 'keep the store in this PostgreSQL database (also PANELCTL_DATABASE_URL)'
complete -c panelctl -n "__panelctl_at 'daemon' 0" -f -a 'start' -d 'start the daemon (detached unless --foreground)'
complete -c panelctl -n "__panelctl_at 'daemon' 0" -f -a 'stop' -d 'stop the daemon of the data directory (SIGTERM, then wait)'
complete -c panelctl -n "__panelctl_at 'daemon' 0" -f -a 'status' -d 'show whether the daemon runs: URL, pid, uptime, version, store, log file, readiness, queue depth and age, attempts and failures in the last minute'
complete -c panelctl -n "__panelctl_at 'daemon' 0" -f -a 'logs' -d 'show the daemon\'s log file (DATA_DIR/daemon.log) readably, filtered by level; --follow for new lines'
complete -c panelctl -n "__panelctl_at 'daemon' 0" -f -a 'install-service' -d 'write a systemd unit running the daemon on this data directory (--print: to stdout)'
complete -c panelctl -n '__panelctl_at \'daemon start\'' -l foreground -d 'run in this process and log to stdout'
complete -c panelctl -n '__panelctl_at \'daemon start\'' -l host -r -d 'address to listen on'
complete -c panelctl -n '__panelctl_at \'daemon start\'' -l port -r -d 'port to listen on (0: any free port)'
complete -c panelctl -n '__panelctl_at \'daemon start\'' -l no-tls -d 'serve plain HTTP (a warning is logged when the host is not loopback)'
complete -c panelctl -n '__panelctl_at \'daemon start\'' -l tls-cert -r -F -d 'PEM certificate to serve instead of the generated one'
complete -c panelctl -n '__panelctl_at \'daemon start\'' -l tls-key -r -F -d 'PEM private key of --tls-cert'
complete -c panelctl -n '__panelctl_at \'daemon start\'' -l allow-private-webhooks -d 'allow webhook deliveries to loopback and private networks'
complete -c panelctl -n '__panelctl_at \'daemon start\'' -l database-url -r -d 'keep the store in this PostgreSQL database, shared with other daemons (also PANELCTL_DATABASE_URL)'
complete -c panelctl -n '__panelctl_at \'daemon start\'' -l log-level -x -a 'fatal error warn info debug' -d 'log level'
complete -c panelctl -n '__panelctl_at \'daemon start\'' -l log-file -r -d 'write the log to FILE as JSON lines, rotated by size (the detached daemon: DATA_DIR/daemon.log)'
complete -c panelctl -n '__panelctl_at \'daemon start\'' -l log-max-size -r -d 'rotate the log file when it reaches this size'
complete -c panelctl -n '__panelctl_at \'daemon start\'' -l log-keep -r -d 'rotated log files to keep (daemon.log.1 to daemon.log.N)'
complete -c panelctl -n '__panelctl_at \'daemon start\'' -l metrics-port -r -d 'serve Prometheus metrics at http://HOST:PORT/metrics (plain HTTP; off unless given)'
complete -c panelctl -n '__panelctl_at \'daemon start\'' -l metrics-host -r -d 'address of the metrics listener (default 127.0.0.1)'
complete -c panelctl -n '__panelctl_at \'daemon stop\'' -l timeout -r -d 'how long to wait for a clean exit'
complete -c panelctl -n '__panelctl_at \'daemon status\'' -l wait-ready -r -d 'first wait up to SECONDS for the daemon to run and answer ready (GET /health/ready); exit 1 if it does not (the systemd unit uses it)'
complete -c panelctl -n '__panelctl_at \'daemon logs\'' -s f -l follow -d 'keep printing new lines as they are written (across rotations) until interrupted'
complete -c panelctl -n '__panelctl_at \'daemon logs\'' -l level -x -a 'trace debug info warn error fatal' -d 'only lines at this level or above'
complete -c panelctl -n '__panelctl_at \'daemon logs\'' -s n -l lines -r -d 'the last N lines (0: the whole file)'
complete -c panelctl -n '__panelctl_at \'daemon install-service\'' -l user -d 'a user unit (~/.config/systemd/user, systemctl --user) instead of a system one (/etc/systemd/system)'
complete -c panelctl -n '__panelctl_at \'daemon install-service\'' -l print -d 'print the unit instead of writing it'
complete -c panelctl -n '__panelctl_at \'daemon install-service\'' -l database-url -r -d 'PostgreSQL store URL for the service (PANELCTL_DATABASE_URL); kept in DATA_DIR/service.env (0600), not in the unit'
complete -c panelctl -n '__panelctl_at \'daemon install-service\'' -l host -r -d 'daemon start --host for the service'
complete -c panelctl -n '__panelctl_at \'daemon install-service\'' -l port -r -d 'daemon start --port for the service'
complete -c panelctl -n '__panelctl_at \'daemon install-service\'' -l no-tls -d 'daemon start --no-tls for the service'
complete -c panelctl -n '__panelctl_at \'daemon install-service\'' -l tls-cert -r -F -d 'daemon start --tls-cert for the service'
complete -c panelctl -n '__panelctl_at \'daemon install-service\'' -l tls-key -r -F -d 'daemon start --tls-key for the service'
complete -c panelctl -n '__panelctl_at \'daemon install-service\'' -l allow-private-webhooks -d 'daemon start --allow-private-webhooks for the service'
complete -c panelctl -n '__panelctl_at \'daemon install-service\'' -l log-level -x -a 'fatal error warn info debug' -d 'daemon start --log-level for the service'
complete -c panelctl -n '__panelctl_at \'daemon install-service\'' -l metrics-port -r -d 'daemon start --metrics-port for the service: Prometheus metrics at http://127.0.0.1:PORT/metrics'
complete -c panelctl -n '__panelctl_at \'daemon install-service\'' -l metrics-host -r -d 'daemon start --metrics-host for the service'
complete -c panelctl -n '__panelctl_at \'login\'' -l email -r -d 'account email (prompted on a terminal when absent)'
complete -c panelctl -n '__panelctl_at \'login\'' -l password-stdin -d 'read the password from the first line of standard input'
complete -c panelctl -n '__panelctl_at \'login\'' -l totp -r -d 'the current two-factor code, when 2FA is enabled'
complete -c panelctl -n "__panelctl_at 'keys' 0" -f -a 'create' -d 'create an API key; the key is printed once and cannot be retrieved again'
complete -c panelctl -n "__panelctl_at 'keys' 0" -f -a 'list' -d 'list your API keys'
complete -c panelctl -n "__panelctl_at 'keys' 0" -f -a 'delete' -d 'delete an API key; it stops working at once'
complete -c panelctl -n '__panelctl_at \'keys create\'' -l expires-at -r -d 'expiry time, RFC 3339 (e.g. 2030-01-31T00:00:00Z)'
complete -c panelctl -n '__panelctl_at \'keys create\'' -l expires-in -r -d 'expiry as a duration from now: 30d, 12h, 90m, 2w, 1y'
complete -c panelctl -n '__panelctl_at \'keys list\'' -s n -l limit -r -d 'at most N items (default: all of them, read page by page)'
complete -c panelctl -n "__panelctl_at 'webhooks' 0" -f -a 'create' -d 'register a webhook endpoint'
complete -c panelctl -n "__panelctl_at 'webhooks' 0" -f -a 'list' -d 'list your webhook endpoints'
complete -c panelctl -n "__panelctl_at 'webhooks' 0" -f -a 'show' -d 'show one webhook endpoint'
complete -c panelctl -n "__panelctl_at 'webhooks' 0" -f -a 'update' -d 'change the URL, events, state or signing secret of an endpoint'
complete -c panelctl -n "__panelctl_at 'webhooks' 0" -f -a 'enable' -d 'activate an endpoint: it receives events again'
complete -c panelctl -n "__panelctl_at 'webhooks' 0" -f -a 'disable' -d 'deactivate an endpoint: it is kept but receives no events'
complete -c panelctl -n "__panelctl_at 'webhooks' 0" -f -a 'delete' -d 'delete a webhook endpoint'
complete -c panelctl -n "__panelctl_at 'webhooks' 0" -f -a 'test' -d 'send a webhook.test event to the endpoint (also when inactive); exit 1 when it fails'
complete -c panelctl -n "__panelctl_at 'webhooks' 0" -f -a 'deliveries' -d 'show the delivery log of an endpoint (last 100 attempts, newest first), or follow it live'
complete -c panelctl -n "__panelctl_at 'webhooks' 0" -f -a 'redeliver' -d 'send a delivery log entry\'s payload again, as a new delivery; exit 1 when it fails'
complete -c panelctl -n "__panelctl_at 'webhooks' 0" -f -a 'recover' -d 'send again every delivery that failed (both attempts) in a time window, as new deliveries'
complete -c panelctl -n "__panelctl_at 'webhooks' 0" -f -a 'rotate-secret' -d 'rotate the signing secret; the previous one keeps signing beside it for the overlap'
complete -c panelctl -n "__panelctl_at 'webhooks' 0" -f -a 'pause' -d 'pause an endpoint: its events are kept, not sent, until it is resumed'
complete -c panelctl -n "__panelctl_at 'webhooks' 0" -f -a 'resume' -d 'resume a paused endpoint: the events kept meanwhile go out in publish order, then new ones'
complete -c panelctl -n '__panelctl_at \'webhooks create\'' -l url -r -d 'URL (https://) that receives the POSTs'
complete -c panelctl -n '__panelctl_at \'webhooks create\'' -l events -x -a "(__panelctl_list \* site.created site.deleted domain.created domain.deleted database.created database.deleted email.created ftp.created backup.completed subscription.created subscription.suspended webhook.test delivery.failed endpoint.disabled)" -d '"*" or a comma-separated list of event names (see panelctl events types)'
complete -c panelctl -n '__panelctl_at \'webhooks create\'' -l secret -r -d 'signing secret (visible to other users in ps: prefer --secret-stdin)'
complete -c panelctl -n '__panelctl_at \'webhooks create\'' -l secret-stdin -d 'read the signing secret from the first line of standard input'
complete -c panelctl -n '__panelctl_at \'webhooks create\'' -l generate-secret -d 'generate a random signing secret and print it once'
complete -c panelctl -n '__panelctl_at \'webhooks create\'' -l inactive -d 'create it inactive (it receives no events until enabled)'
complete -c panelctl -n '__panelctl_at \'webhooks create\'' -l paused -d 'create it paused (its events are kept until `webhooks resume`)'
complete -c panelctl -n '__panelctl_at \'webhooks create\'' -l signature -x -a 'seed standard-webhooks' -d 'seed: X-Webhook-Signature only; standard-webhooks: also the Standard Webhooks headers (needs a whsec_ secret)'
complete -c panelctl -n '__panelctl_at \'webhooks create\'' -l header -r -d 'extra request header \'Name: value\' sent with every delivery (repeatable; the value is never shown again)'
complete -c panelctl -n '__panelctl_at \'webhooks create\'' -l retry-schedule -r -d 'seconds before each retry, comma-separated (e.g. 1,1,2; default 2); "none" for no retry'
complete -c panelctl -n '__panelctl_at \'webhooks create\'' -l max-in-flight -r -d 'attempts at once to the endpoint, 1-64 (default 8)'
complete -c panelctl -n '__panelctl_at \'webhooks create\'' -l rate-limit -r -d 'attempts per second to the endpoint at most, 1-1000, over every daemon; "none" for no limit (the default)'
complete -c panelctl -n '__panelctl_at \'webhooks list\'' -s n -l limit -r -d 'at most N items (default: all of them, read page by page)'
complete -c panelctl -n '__panelctl_at \'webhooks update\'' -l url -r -d 'new URL (https://)'
complete -c panelctl -n '__panelctl_at \'webhooks update\'' -l events -x -a "(__panelctl_list \* site.created site.deleted domain.created domain.deleted database.created database.deleted email.created ftp.created backup.completed subscription.created subscription.suspended webhook.test delivery.failed endpoint.disabled)" -d 'new subscription: "*" or a comma-separated list of event names'
complete -c panelctl -n '__panelctl_at \'webhooks update\'' -l active -d 'enable the endpoint'
complete -c panelctl -n '__panelctl_at \'webhooks update\'' -l inactive -d 'disable the endpoint (it receives no events)'
complete -c panelctl -n '__panelctl_at \'webhooks update\'' -l secret-stdin -d 'rotate the signing secret: read the new one from standard input'
complete -c panelctl -n '__panelctl_at \'webhooks update\'' -l generate-secret -d 'rotate the signing secret: generate one and print it once'
complete -c panelctl -n '__panelctl_at \'webhooks update\'' -l signature -x -a 'seed standard-webhooks' -d 'seed or standard-webhooks (which needs a whsec_ secret)'
complete -c panelctl -n '__panelctl_at \'webhooks update\'' -l header -r -d 'set a request header \'Name: value\', or remove one with \'Name:\' (repeatable)'
complete -c panelctl -n '__panelctl_at \'webhooks update\'' -l retry-schedule -r -d 'seconds before each retry, comma-separated (e.g. 1,1,2; default 2); "none" for no retry'
complete -c panelctl -n '__panelctl_at \'webhooks update\'' -l max-in-flight -r -d 'attempts at once to the endpoint, 1-64'
complete -c panelctl -n '__panelctl_at \'webhooks update\'' -l rate-limit -r -d 'attempts per second to the endpoint at most, 1-1000, over every daemon; "none" for no limit (the default)'
complete -c panelctl -n '__panelctl_at \'webhooks test\'' -l message -r -d 'the test payload\'s data.message'
complete -c panelctl -n '__panelctl_at \'webhooks test\'' -l no-wait -d 'report the first attempt only, without waiting for a retry'
complete -c panelctl -n '__panelctl_at \'webhooks deliveries\'' -s f -l follow -d 'print the last --limit attempts (default 10), then new ones as they happen (JSON lines with --json) until interrupted'
complete -c panelctl -n '__panelctl_at \'webhooks deliveries\'' -l failed -d 'only failed attempts'
complete -c panelctl -n '__panelctl_at \'webhooks deliveries\'' -l event -r -d 'only these events (a name, or comma-separated names)'
complete -c panelctl -n '__panelctl_at \'webhooks deliveries\'' -l since -r -d 'only attempts since then: a duration back from now (2h, 30m, 1d) or an RFC 3339 time'
complete -c panelctl -n '__panelctl_at \'webhooks deliveries\'' -s n -l limit -r -d 'at most N entries (with --follow: N past entries first, default 10)'
complete -c panelctl -n '__panelctl_at \'webhooks redeliver\'' -l no-wait -d 'report the first attempt only, without waiting for a retry'
complete -c panelctl -n '__panelctl_at \'webhooks recover\'' -l since -r -d 'start of the window: a duration back from now (2h, 30m, 1d) or an RFC 3339 time'
complete -c panelctl -n '__panelctl_at \'webhooks recover\'' -l until -r -d 'end of the window (default now): a duration back from now or an RFC 3339 time'
complete -c panelctl -n '__panelctl_at \'webhooks rotate-secret\'' -l secret-stdin -d 'read the new secret from the first line of standard input'
complete -c panelctl -n '__panelctl_at \'webhooks rotate-secret\'' -l generate-secret -d 'let the daemon generate the new secret and print it once (the default)'
complete -c panelctl -n '__panelctl_at \'webhooks rotate-secret\'' -l overlap -r -d 'how long the previous secret still signs: 24h, 90m, 7d (at most), or 0 to end it now'
complete -c panelctl -n '__panelctl_at \'listen\'' -l events -x -a "(__panelctl_list \* site.created site.deleted domain.created domain.deleted database.created database.deleted email.created ftp.created backup.completed subscription.created subscription.suspended webhook.test delivery.failed endpoint.disabled)" -d '"*" or a comma-separated list of event names'
complete -c panelctl -n '__panelctl_at \'listen\'' -l forward-to -r -d 'POST each event to this URL (plain http://localhost allowed) and print one line per attempt'
complete -c panelctl -n '__panelctl_at \'listen\'' -l print-secret -d 'print the session\'s signing secret alone on stdout first, for scripts'
complete -c panelctl -n "__panelctl_at 'events' 0" -f -a 'types' -d 'list the event names, their meaning and data fields'
complete -c panelctl -n "__panelctl_at 'events' 0" -f -a 'emit' -d 'publish an event to the subscribed endpoints (admin); data fields as key=value'
complete -c panelctl -n '__panelctl_at \'events emit\'' -l owner -r -d 'id of the customer the event belongs to'
complete -c panelctl -n '__panelctl_at \'events emit\'' -l data -r -d 'data fields, e.g. --data site_id=7 domain=example.com'
complete -c panelctl -n "__panelctl_at 'events emit' 0" -x -a 'site.created site.deleted domain.created domain.deleted database.created database.deleted email.created ftp.created backup.completed subscription.created subscription.suspended webhook.test delivery.failed endpoint.disabled'
complete -c panelctl -n "__panelctl_at 'sites' 0" -f -a 'list' -d 'list websites (default: your default subscription\'s; admins: all)'
complete -c panelctl -n "__panelctl_at 'sites' 0" -f -a 'create' -d 'create a website (emits site.created)'
complete -c panelctl -n "__panelctl_at 'sites' 0" -f -a 'delete' -d 'delete a website (emits site.deleted)'
complete -c panelctl -n '__panelctl_at \'sites list\'' -l subscription -r -d 'only the sites of this subscription'
complete -c panelctl -n '__panelctl_at \'sites list\'' -s n -l limit -r -d 'at most N items (default: all of them, read page by page)'
complete -c panelctl -n '__panelctl_at \'sites create\'' -l subscription -r -d 'subscription to create it in (default: your default subscription; admins have none and must name one)'
complete -c panelctl -n "__panelctl_at 'subscriptions' 0" -f -a 'list' -d 'list your subscriptions (admins: all)'
complete -c panelctl -n "__panelctl_at 'subscriptions' 0" -f -a 'create' -d 'create a subscription for a customer (admin; emits subscription.created); the customer must exist first: panelctl users create --role customer'
complete -c panelctl -n "__panelctl_at 'subscriptions' 0" -f -a 'suspend' -d 'suspend a subscription (admin; emits subscription.suspended)'
complete -c panelctl -n '__panelctl_at \'subscriptions list\'' -s n -l limit -r -d 'at most N items (default: all of them, read page by page)'
complete -c panelctl -n '__panelctl_at \'subscriptions create\'' -l customer -r -d 'id of a user with the role customer (panelctl users list)'
complete -c panelctl -n '__panelctl_at \'subscriptions create\'' -l domain -r -d 'main domain of the subscription'
complete -c panelctl -n '__panelctl_at \'subscriptions create\'' -l default -d 'make it the customer\'s default subscription'
complete -c panelctl -n "__panelctl_at 'users' 0" -f -a 'list' -d 'list user accounts (admin)'
complete -c panelctl -n "__panelctl_at 'users' 0" -f -a 'create' -d 'create a user account (admin); the password is read, asked, or generated and shown once'
complete -c panelctl -n "__panelctl_at 'users' 0" -f -a 'delete' -d 'delete a user account with its API keys and webhook endpoints (admin)'
complete -c panelctl -n '__panelctl_at \'users list\'' -s n -l limit -r -d 'at most N items (default: all of them, read page by page)'
complete -c panelctl -n '__panelctl_at \'users create\'' -l email -r -d 'login email'
complete -c panelctl -n '__panelctl_at \'users create\'' -l name -r -d 'display name'
complete -c panelctl -n '__panelctl_at \'users create\'' -l role -x -a 'admin customer' -d 'account role'
complete -c panelctl -n '__panelctl_at \'users create\'' -l password-stdin -d 'read the password from the first line of standard input'
complete -c panelctl -n "__panelctl_at 'admin' 0" -f -a 'reset-password' -d 'set a user\'s password (ending their sessions), with or without a running daemon; for the data directory\'s owner'
complete -c panelctl -n "__panelctl_at 'admin' 0" -f -a 'unlock' -d 'end login lockouts (all, or one address\'s, or one account\'s second factor), with or without a running daemon; for the data directory\'s owner'
complete -c panelctl -n '__panelctl_at \'admin reset-password\'' -l email -r -d 'the user\'s login email'
complete -c panelctl -n '__panelctl_at \'admin reset-password\'' -l password-stdin -d 'read the new password from the first line of standard input (else asked on a terminal, or generated and shown once)'
complete -c panelctl -n '__panelctl_at \'admin reset-password\'' -l database-url -r -d 'the PostgreSQL store (default PANELCTL_DATABASE_URL); else the data directory\'s JSON store'
complete -c panelctl -n '__panelctl_at \'admin unlock\'' -l ip -r -d 'end the lockout of this address only (failed logins and password resets from it)'
complete -c panelctl -n '__panelctl_at \'admin unlock\'' -l email -r -d 'end the lockout of this account\'s second factor only (wrong two-factor codes)'
complete -c panelctl -n '__panelctl_at \'admin unlock\'' -l database-url -r -d 'the PostgreSQL store (default PANELCTL_DATABASE_URL); else the data directory\'s JSON store'
complete -c panelctl -n "__panelctl_at 'store' 0" -f -a 'migrate' -d 'copy a stopped JSON store into an empty PostgreSQL database'
complete -c panelctl -n '__panelctl_at \'store migrate\'' -l to -r -d 'the PostgreSQL database (postgres://user:password@host:5432/db)'
complete -c panelctl -n "__panelctl_at 'settings' 0" -f -a 'get' -d 'show all settings, or the value of KEY'
complete -c panelctl -n "__panelctl_at 'settings' 0" -f -a 'set' -d 'change one setting; applies without a daemon restart'
complete -c panelctl -n "__panelctl_at 'settings get' 0" -x -a 'jwt_ttl_seconds rate_limit_mode rate_limit_login_per_minute rate_limit_reset_per_minute rate_limit_user_per_minute login_max_attempts login_lockout_minutes totp_max_failures totp_lockout_minutes webhook_allow_private_networks webhook_disable_after_failures'
complete -c panelctl -n "__panelctl_at 'settings set' 0" -x -a 'jwt_ttl_seconds rate_limit_mode rate_limit_login_per_minute rate_limit_reset_per_minute rate_limit_user_per_minute login_max_attempts login_lockout_minutes totp_max_failures totp_lockout_minutes webhook_allow_private_networks webhook_disable_after_failures'
complete -c panelctl -n "__panelctl_at '2fa' 0" -f -a 'setup' -d 'create a TOTP secret and show it as a QR code; confirm with panelctl 2fa enable CODE'
complete -c panelctl -n "__panelctl_at '2fa' 0" -f -a 'enable' -d 'turn on two-factor authentication with a code from your authenticator app'
complete -c panelctl -n "__panelctl_at '2fa' 0" -f -a 'disable' -d 'turn off two-factor authentication with a current code'
complete -c panelctl -n '__panelctl_at \'watch\'' -l endpoint -r -d 'only this webhook endpoint'
complete -c panelctl -n '__panelctl_at \'watch\'' -l failed -d 'start with only failed attempts shown (f toggles)'
complete -c panelctl -n "__panelctl_at 'completion' 0" -x -a 'bash zsh fish'
