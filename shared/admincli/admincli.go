// Package admincli is the admin command line (`paysvc-admin`): the
// specification's "management console" (docs/security.md). It provisions
// merchants, sites, API keys and webhook subscriptions through package
// provision, which writes through the same store ports as the API, in the
// store the service itself is configured with (PAYSVC_STORE, PAYSVC_DATA_DIR,
// PAYSVC_TABLE, PAYSVC_ENVIRONMENT, AWS_ENDPOINT_URL).
//
// While a local server (`make run`) holds the embedded store, every command
// runs in that server through its admin API (package adminapi: the token and
// address it keeps in the data directory), on the server's open store;
// trigger, listen and delivery retry exist only there. With DynamoDB, or when
// no local server runs, the CLI opens the store itself.
//
// Every command takes its own flags (standard library flag, one FlagSet per
// command), prints aligned text by default and one JSON value on stdout with
// --json. Diagnostics, warnings and errors go to stderr. Exit codes: 0
// success (and -h), 1 failure, 2 usage error.
package admincli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/yp/paysvc/shared/adminapi"
	"github.com/yp/paysvc/shared/app"
	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/config"
)

// Exit codes returned by Run.
const (
	ExitOK    = 0
	ExitError = 1
	ExitUsage = 2
)

// prog is the command's name in messages.
const prog = "paysvc-admin"

// Options tunes a run. The zero value is what the real command uses.
type Options struct {
	// Clock stamps records (createdAt, revokedAt, secret expiry); nil means
	// the system clock.
	Clock clock.Clock
	// Server, when set, is the running local server the command runs in
	// (its admin API's exec): its open stores and queues, and the
	// operations only it has.
	Server *Server
}

// Server is a running local server as the commands it runs see it.
type Server struct {
	Config config.Config
	Stores *app.Stores
	Queues *app.Queues
	Local  *adminapi.Local
}

// Run runs the admin command line with args (without the program name),
// reading configuration through getenv, and returns the exit code.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	return Options{}.Run(ctx, args, getenv, stdout, stderr)
}

// Run is the package-level Run with these options.
func (o Options) Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	c := &cli{getenv: getenv, stdout: stdout, stderr: stderr, clock: cmp.Or[clock.Clock](o.Clock, clock.System{}), server: o.Server}
	if o.Server == nil && !isHelp(args) {
		if remote := c.localServer(ctx); remote != nil && args[0] != "listen" {
			return c.runRemote(ctx, remote, args)
		}
	}
	return c.run(ctx, args)
}

// cli is one invocation.
type cli struct {
	getenv         func(string) string
	stdout, stderr io.Writer
	clock          clock.Clock
	server         *Server // in a running local server (Options.Server)
}

// command is one leaf command, e.g. "merchant create".
type command struct {
	path    string // words after the program name
	summary string
	run     func(ctx context.Context, path string, args []string) error
}

// commands lists every command in help order.
func (c *cli) commands() []command {
	return []command{
		{"merchant create", "create a merchant", c.merchantCreate},
		{"merchant update", "change a merchant's settings", c.merchantUpdate},
		{"merchant list", "list merchants", c.merchantList},
		{"merchant show", "show one merchant with counts of its sites, keys and subscriptions", c.merchantShow},
		{"merchant deactivate", "deactivate a merchant (its keys are refused)", c.merchantDeactivate},
		{"merchant shards", "show or raise a merchant's listing shard counts (DynamoDB)", c.merchantShards},
		{"site create", "create a site of a merchant", c.siteCreate},
		{"site list", "list a merchant's sites", c.siteList},
		{"key create", "create an API key (the key is printed once)", c.keyCreate},
		{"key list", "list a merchant's API keys (never the keys themselves)", c.keyList},
		{"key revoke", "revoke an API key", c.keyRevoke},
		{"subscription create", "create a webhook subscription (the secret is printed once)", c.subCreate},
		{"subscription list", "list a merchant's webhook subscriptions (never their secrets)", c.subList},
		{"subscription rotate-secret", "add a new signing secret; the old one signs until the overlap ends", c.subRotate},
		{"subscription enable", "enable a webhook subscription", c.subSetEnabled(true)},
		{"subscription disable", "disable a webhook subscription", c.subSetEnabled(false)},
		{"delivery list", "list a merchant's webhook deliveries with status and last error", c.deliveryList},
		{"delivery show", "show one delivery by id (its merchant, subscription, attempts, last error)", c.deliveryShow},
		{"delivery retry", "make a delivery's next attempt now, a pending one too (a running local server only)", c.deliveryRetry},
		{"delivery redrive", "give failed deliveries a new set of attempts (same webhook id)", c.deliveryRedrive},
		{"delivery redrive-dlq", "redrive every delivery in the dead-letter queue", c.deliveryRedriveDLQ},
		{"notification list", "list the upstream notifications no merchant was found for (--unroutable) or account-level ones (--account)", c.notificationList},
		{"notification route", "route unroutable notifications once their merchant exists", c.notificationRoute},
		{"trigger", "send a signed upstream notification (EVENT_CODE) through the running local server", c.trigger},
		{"listen", "forward a merchant's webhooks to a local URL, signed with a secret of this listen (a running local server only)", c.listen},
		{"seed", "apply a seed file (idempotent)", c.seed},
	}
}

// usageError is a mistake in the command line: exit code 2 and a hint.
type usageError struct {
	path string // command path, "" for the top level
	msg  string
}

func (e *usageError) Error() string { return e.msg }

// usagef returns a usageError for the command at path.
func usagef(path, format string, args ...any) error {
	return &usageError{path: path, msg: fmt.Sprintf(format, args...)}
}

// run runs one invocation, prints its error if any, and returns the exit code.
func (c *cli) run(ctx context.Context, args []string) int {
	err := c.dispatch(ctx, args)
	var ue *usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return ExitOK
	case errors.As(err, &ue):
		name := strings.TrimSpace(prog + " " + ue.path)
		fmt.Fprintf(c.stderr, "%s: %s\nRun '%s -h' for usage.\n", name, ue.msg, name)
		return ExitUsage
	default:
		fmt.Fprintf(c.stderr, "%s %v\n", prog, err)
		return ExitError
	}
}

// dispatch finds the command named by the leading words of args.
func (c *cli) dispatch(ctx context.Context, args []string) error {
	if len(args) == 0 {
		c.topUsage(c.stderr)
		return usagef("", "missing command")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		if args[0] == "help" && len(args) > 1 {
			return c.dispatch(ctx, append(append([]string{}, args[1:]...), "-h"))
		}
		c.topUsage(c.stdout)
		return flag.ErrHelp
	}
	cmds := c.commands()
	for _, cmd := range cmds {
		words := strings.Fields(cmd.path)
		if len(args) >= len(words) && strings.Join(args[:len(words)], " ") == cmd.path {
			err := cmd.run(ctx, cmd.path, args[len(words):])
			var ue *usageError
			if err == nil || errors.Is(err, flag.ErrHelp) || errors.As(err, &ue) {
				return err
			}
			return fmt.Errorf("%s: %w", cmd.path, err)
		}
	}
	// A known group without (or with an unknown) subcommand.
	var group []command
	for _, cmd := range cmds {
		if g, _, ok := strings.Cut(cmd.path, " "); ok && g == args[0] {
			group = append(group, cmd)
		}
	}
	if len(group) == 0 {
		c.topUsage(c.stderr)
		return usagef("", "unknown command %q", args[0])
	}
	help := len(args) > 1 && (args[1] == "-h" || args[1] == "-help" || args[1] == "--help")
	w := c.stderr
	if help {
		w = c.stdout
	}
	fmt.Fprintf(w, "Usage: %s %s <command> [flags]\n\nCommands:\n", prog, args[0])
	printCommands(w, group)
	switch {
	case help:
		return flag.ErrHelp
	case len(args) == 1:
		return usagef(args[0], "missing %s command", args[0])
	default:
		return usagef(args[0], "unknown %s command %q", args[0], args[1])
	}
}

// topUsage prints the overall help.
func (c *cli) topUsage(w io.Writer) {
	fmt.Fprintf(w, `Usage: %s <command> [flags]

Provisions merchants, sites, API keys and webhook subscriptions in the store
the service is configured with (the "management console"). While a local
server (make run) holds the embedded store, commands run in it through its
admin API; trigger, listen and delivery retry need it.

Commands:
`, prog)
	printCommands(w, c.commands())
	fmt.Fprintf(w, `
Every command accepts -h for its flags and --json for machine-readable output.

Environment (the same variables as the service):
  PAYSVC_STORE        embedded (default) or dynamo
  PAYSVC_DATA_DIR     embedded store directory (default .paysvc); while a local
                      server runs on it, commands go through its admin API
  PAYSVC_TABLE        DynamoDB table (default paysvc)
  PAYSVC_ENVIRONMENT  test (default) or live: the prefix of new API keys
  AWS_ENDPOINT_URL    AWS endpoint override (moto, LocalStack); AWS
                      credentials and region come from the usual AWS variables

Exit codes: 0 success, 1 failure, 2 usage error.
`)
}

// printCommands prints an aligned command list.
func printCommands(w io.Writer, cmds []command) {
	width := 0
	for _, cmd := range cmds {
		width = max(width, len(cmd.path))
	}
	for _, cmd := range cmds {
		fmt.Fprintf(w, "  %-*s  %s\n", width, cmd.path, cmd.summary)
	}
}
