package admincli

import (
	"context"
	"fmt"
	"strings"

	"github.com/yp/paysvc/shared/provision"
)

// seedResult is what seed prints: how many records of each kind the file
// holds (all of them are now in the store).
type seedResult struct {
	File          string `json:"file"`
	Merchants     int    `json:"merchants"`
	Sites         int    `json:"sites"`
	APIKeys       int    `json:"apiKeys"`
	Subscriptions int    `json:"subscriptions"`
}

func (c *cli) seed(ctx context.Context, path string, args []string) error {
	f := c.newFlags(path, "--file PATH [--json]",
		"Applies a seed file (JSON: merchants, sites, apiKeys, subscriptions; see docs/local.md, \"Seed file\").\n"+
			"It is idempotent: records are upserted, keys that exist are left alone, and subscriptions\n"+
			"whose URL is unchanged keep their secrets and state. Keys and secrets in the file are\n"+
			"plain text and are stored hashed / as secrets; they are not printed.")
	file := f.str("file", "", "the seed file `PATH` (required)")
	if err := f.parse(args, "file"); err != nil {
		return err
	}
	name := strings.TrimSpace(*file)
	sd, err := provision.LoadSeed(name)
	if err != nil {
		return fmt.Errorf("read seed file: %w", err)
	}
	return c.withStore(ctx, func(s *session) error {
		if err := s.prov.ApplySeed(ctx, sd); err != nil {
			return err
		}
		res := seedResult{
			File: name, Merchants: len(sd.Merchants), Sites: len(sd.Sites),
			APIKeys: len(sd.APIKeys), Subscriptions: len(sd.Subscriptions),
		}
		if *f.json {
			return c.printJSON(res)
		}
		_, err := fmt.Fprintf(c.stdout, "applied %s: %d merchants, %d sites, %d API keys, %d subscriptions\n",
			res.File, res.Merchants, res.Sites, res.APIKeys, res.Subscriptions)
		return err
	})
}
