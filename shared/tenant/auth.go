package tenant

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/storeerr"
)

// Principal is an authenticated caller: a live key and its merchant id.
type Principal struct {
	Key APIKey
}

// MerchantID returns the caller's merchant.
func (p Principal) MerchantID() string { return p.Key.MerchantID }

var siteIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Authenticator resolves API keys, merchants and sites for a request and
// enforces tenancy: nothing of another merchant is ever returned.
//
// Lookups are cached per instance for CacheTTL (default 5 s) to keep the
// critical path short, and refreshed in the background before they expire
// (cache); a revocation therefore takes effect on other instances within
// CacheTTL, and at once on the instance that revoked. A site and its
// merchant not in the cache load in parallel: a cold request waits for
// two reads in a row (key, then site and merchant), not three.
type Authenticator struct {
	store Store
	env   Environment

	keys      *cache[string, APIKey]
	merchants *cache[string, Merchant]
	sites     *cache[string, Site]
}

// NewAuthenticator returns an Authenticator for a deployment of env. A ttl
// of 0 disables caching.
func NewAuthenticator(s Store, env Environment, clk clock.Clock, ttl time.Duration) *Authenticator {
	return &Authenticator{
		store: s, env: env,
		keys:      newCache(clk, ttl, true, s.GetAPIKeyByHash),
		merchants: newCache(clk, ttl, true, s.GetMerchant),
		sites:     newCache(clk, ttl, true, s.GetSite),
	}
}

// Environment returns the deployment's environment.
func (a *Authenticator) Environment() Environment { return a.env }

// Authenticate checks an Authorization header value. Missing, malformed,
// unknown, revoked and wrong-environment keys are apperr.Unauthenticated.
func (a *Authenticator) Authenticate(ctx context.Context, authorization string) (Principal, error) {
	const bearer = "Bearer "
	if authorization == "" {
		return Principal{}, apperr.New(apperr.Unauthenticated, "missing Authorization header; send 'Authorization: Bearer <API key>'")
	}
	if len(authorization) <= len(bearer) || !strings.EqualFold(authorization[:len(bearer)], bearer) {
		return Principal{}, apperr.New(apperr.Unauthenticated, "malformed Authorization header; send 'Authorization: Bearer <API key>'")
	}
	key := strings.TrimSpace(authorization[len(bearer):])
	env := EnvironmentOfKey(key)
	if env == "" || len(key) > 200 {
		return Principal{}, apperr.New(apperr.Unauthenticated, "invalid API key")
	}
	if env != a.env {
		return Principal{}, apperr.Newf(apperr.Unauthenticated, "%s key sent to the %s environment", env, a.env)
	}
	k, err := a.key(ctx, HashKey(key))
	if errors.Is(err, storeerr.ErrNotFound) {
		return Principal{}, apperr.New(apperr.Unauthenticated, "invalid API key")
	}
	if err != nil {
		return Principal{}, apperr.Wrap(apperr.Internal, "internal error", fmt.Errorf("authenticate: %w", err))
	}
	if k.Revoked() {
		return Principal{}, apperr.New(apperr.Unauthenticated, "API key revoked")
	}
	if k.Environment != a.env {
		return Principal{}, apperr.Newf(apperr.Unauthenticated, "%s key sent to the %s environment", k.Environment, a.env)
	}
	return Principal{Key: k}, nil
}

// Authorize checks the key's permission for an endpoint (apperr.Forbidden).
func (a *Authenticator) Authorize(p Principal, perm Permission) error {
	if !p.Key.Allows(perm) {
		return apperr.Newf(apperr.Forbidden, "API key not allowed to call this endpoint (needs permission %q)", perm)
	}
	return nil
}

// Merchant returns the caller's merchant: apperr.MerchantNotFound when
// missing or deactivated, apperr.MerchantNotEcommerce when not set up for
// ecommerce.
func (a *Authenticator) Merchant(ctx context.Context, p Principal) (Merchant, error) {
	m, err := a.merchant(ctx, p.MerchantID())
	if errors.Is(err, storeerr.ErrNotFound) || (err == nil && !m.Active) {
		return Merchant{}, apperr.New(apperr.MerchantNotFound, "merchant not found")
	}
	if err != nil {
		return Merchant{}, apperr.Wrap(apperr.Internal, "internal error", fmt.Errorf("merchant %s: %w", p.MerchantID(), err))
	}
	if !m.ReadyForEcommerce() {
		return Merchant{}, apperr.New(apperr.MerchantNotEcommerce, "merchant account not set up for ecommerce")
	}
	return m, nil
}

// Site resolves siteID for the caller: apperr.SiteIDMalformed when
// malformed; apperr.SiteNotFound when unknown, not an ecommerce site, another merchant's, or outside
// the key's sites (one answer for all, so existence never leaks); then the
// merchant checks of Merchant.
func (a *Authenticator) Site(ctx context.Context, p Principal, siteID string) (Site, Merchant, error) {
	if !siteIDPattern.MatchString(siteID) {
		return Site{}, Merchant{}, apperr.New(apperr.SiteIDMalformed, "siteId must be 1 to 64 characters of A-Z, a-z, 0-9, '_' or '-'")
	}
	notFound := func() error { return apperr.New(apperr.SiteNotFound, "site not found or not an ecommerce site") }
	if !p.Key.AllowsSite(siteID) {
		return Site{}, Merchant{}, notFound()
	}
	var r siteRead
	if a.merchants.fresh(p.MerchantID()) {
		r.site, r.err = a.site(ctx, siteID)
		if r.err == nil {
			r.merchant, r.merr = a.Merchant(ctx, p)
		}
	} else {
		r = a.siteAndMerchant(ctx, p, siteID)
	}
	s, m, err, merr := r.site, r.merchant, r.err, r.merr
	if errors.Is(err, storeerr.ErrNotFound) {
		return Site{}, Merchant{}, notFound()
	}
	if err != nil {
		return Site{}, Merchant{}, apperr.Wrap(apperr.Internal, "internal error", fmt.Errorf("site %s: %w", siteID, err))
	}
	if s.MerchantID != p.MerchantID() || s.Type != SiteEcommerce {
		return Site{}, Merchant{}, notFound()
	}
	if merr != nil {
		return Site{}, Merchant{}, merr
	}
	return s, m, nil
}

// siteRead is a site and its merchant as read, each with its error.
type siteRead struct {
	site      Site
	merchant  Merchant
	err, merr error
}

// siteAndMerchant reads the site and the merchant at once (the merchant's
// cache entry is stale: both are store reads). Apart from Site so that a
// warm cache's path allocates nothing for the goroutine.
func (a *Authenticator) siteAndMerchant(ctx context.Context, p Principal, siteID string) siteRead {
	var r siteRead
	done := make(chan struct{})
	go func() { defer close(done); r.merchant, r.merr = a.Merchant(ctx, p) }()
	r.site, r.err = a.site(ctx, siteID)
	<-done
	return r
}

// RequireFlow returns apperr.SiteFlowNotEnabled when the site is not enabled for f.
func RequireFlow(s Site, f Flow) error {
	if !s.HasFlow(f) {
		return apperr.Newf(apperr.SiteFlowNotEnabled, "site type cannot be used for this: site not enabled for the %s flow", f)
	}
	return nil
}

// Forget drops a cached key so a revocation on this instance is immediate.
func (a *Authenticator) Forget(hash string) { a.keys.drop(hash) }

func (a *Authenticator) key(ctx context.Context, hash string) (APIKey, error) {
	return a.keys.get(ctx, hash)
}

func (a *Authenticator) merchant(ctx context.Context, id string) (Merchant, error) {
	return a.merchants.get(ctx, id)
}

func (a *Authenticator) site(ctx context.Context, id string) (Site, error) {
	return a.sites.get(ctx, id)
}
