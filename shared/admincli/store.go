package admincli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/yp/paysvc/shared/app"
	"github.com/yp/paysvc/shared/config"
	"github.com/yp/paysvc/shared/provision"
	"github.com/yp/paysvc/shared/store/embedded"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
)

// session is an open store and the provisioner writing to it.
type session struct {
	cfg    config.Config
	prov   *provision.Provisioner
	stores *app.Stores
}

// tenants returns the tenant store port.
func (s *session) tenants() tenant.Store { return s.prov.Store }

// withStore opens the configured store (the same variables as the service),
// runs fn and closes the store again, so the embedded file is held only for
// the command's duration.
func (c *cli) withStore(ctx context.Context, fn func(s *session) error) (err error) {
	var cfg config.Config
	var stores *app.Stores
	if c.server != nil { // in the running local server: its open store
		cfg, stores = c.server.Config, c.server.Stores
	} else {
		if cfg, err = config.FromEnv(c.getenv, config.StoreEmbedded); err != nil {
			return fmt.Errorf("configuration: %w", err)
		}
		stores, err = app.OpenStores(ctx, cfg, c.clock)
		if errors.Is(err, embedded.ErrInUse) {
			return fmt.Errorf("the data dir %s is in use by another process whose admin API does not answer (a local server starting or stopping? stop it, or point PAYSVC_DATA_DIR elsewhere)", cfg.DataDir)
		}
		if err != nil {
			return fmt.Errorf("open the %s store: %w", cfg.Store, err)
		}
		defer func() {
			if cerr := stores.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("close the store: %w", cerr)
			}
		}()
	}
	return fn(&session{cfg: cfg, prov: &provision.Provisioner{Store: stores.Tenants, Env: cfg.Environment, Clock: c.clock}, stores: stores})
}

// merchant returns merchant id, or an error naming it when it is unknown.
func (s *session) merchant(ctx context.Context, id string) (tenant.Merchant, error) {
	m, err := s.tenants().GetMerchant(ctx, id)
	if errors.Is(err, storeerr.ErrNotFound) {
		return m, fmt.Errorf("unknown merchant %q (see `%s merchant list`)", id, prog)
	}
	if err != nil {
		return m, fmt.Errorf("read merchant %q: %w", id, err)
	}
	return m, nil
}

// withMerchant is withStore for commands about one merchant: it resolves
// the --merchant id (an unknown one is an error naming it) before fn.
func (c *cli) withMerchant(ctx context.Context, id string, fn func(s *session, m tenant.Merchant) error) error {
	return c.withStore(ctx, func(s *session) error {
		m, err := s.merchant(ctx, strings.TrimSpace(id))
		if err != nil {
			return err
		}
		return fn(s, m)
	})
}
