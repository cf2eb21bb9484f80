package admincli

import (
	"context"
	"errors"
	"fmt"

	"github.com/yp/paysvc/shared/store/dynamo"
)

// keyMigrator is the DynamoDB store's layout migration (docs/scale.md).
type keyMigrator interface {
	MigrateKeys(ctx context.Context) (dynamo.MigrationReport, error)
}

// tableMigrateKeys moves the items of the previous DynamoDB key layout to
// the current one; run once after deploying the version that introduced it.
func (c *cli) tableMigrateKeys(ctx context.Context, path string, args []string) error {
	f := c.newFlags(path, "[--json]",
		"Moves items written under the previous DynamoDB key layout to the current one (idempotency records\n"+
			"into their own partitions, webhook deliveries onto their gsi1 shard). Safe while the service runs;\n"+
			"a second run finds nothing to do. See docs/scale.md, \"Migration\".")
	if err := f.parse(args); err != nil {
		return err
	}
	return c.withStore(ctx, func(s *session) error {
		m, ok := s.stores.Tenants.(keyMigrator)
		if !ok {
			return errors.New("only the dynamo store has a key layout to migrate (PAYSVC_STORE=dynamo)")
		}
		rep, err := m.MigrateKeys(ctx)
		if err != nil {
			return err
		}
		if *f.json {
			return c.printJSON(rep)
		}
		_, err = fmt.Fprintf(c.stdout, "scanned %d items: %d idempotency records moved, %d dropped (a newer record exists), %d deliveries re-indexed, %d saved meanwhile, "+
			"%d history entries moved, %d unroutable entries moved, %d dropped (their event saved meanwhile)\n",
			rep.ItemsScanned, rep.IdempotencyMoved, rep.IdempotencyKept, rep.DeliveriesIndexed, rep.DeliveriesChanged,
			rep.EventsMoved, rep.UnroutableMoved, rep.UnroutableDropped)
		return err
	})
}
