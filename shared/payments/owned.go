package payments

import (
	"context"
	"errors"
	"fmt"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
)

// Reader reads payment heads (the lookups read through it too).
type Reader interface {
	GetPayment(ctx context.Context, psp string) (Head, error)
}

// Owned returns payment psp of this merchant and site, or
// apperr.PaymentNotFound for an unknown one and for one of another
// merchant or site alike (and for the service's internal records).
func Owned(ctx context.Context, st Reader, m tenant.Merchant, site tenant.Site, psp string) (Head, error) {
	notFound := apperr.New(apperr.PaymentNotFound, "payment not found for this site")
	if psp == "" || len(psp) > maxPSPReference || IsPendingKey(psp) {
		return Head{}, notFound
	}
	h, err := st.GetPayment(ctx, psp)
	if errors.Is(err, storeerr.ErrNotFound) {
		return Head{}, notFound
	}
	if err != nil {
		return Head{}, apperr.Wrap(apperr.Internal, "internal error", fmt.Errorf("read payment %s: %w", psp, err))
	}
	if h.MerchantID != m.ID || h.SiteID != site.ID || h.BoundTo != "" {
		return Head{}, notFound
	}
	return h, nil
}

// maxPSPReference bounds a pspReference in a path.
const maxPSPReference = 64
